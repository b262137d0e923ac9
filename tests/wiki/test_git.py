import pytest

from kb_ai.errors import KbAiError, NotFoundError
from wiki import commit_all, file_history, git, head_sha, show_diff


def test_commit_all_returns_none_when_nothing_changed(kb):
    assert commit_all(kb, "nothing") is None

    (kb.state_dir / "state.db").write_bytes(b"not versioned")
    (kb.root / "stray.txt").write_text("the user's, not kb-ai's")
    assert commit_all(kb, "still nothing") is None


def test_commit_all_commits_additions_and_deletions(kb):
    page = kb.wiki_dir / "topic" / "a.md"
    page.parent.mkdir()
    page.write_text("one\n")

    sha = commit_all(kb, "Add a")

    assert sha == head_sha(kb)
    assert git(kb, "log", "-1", "--format=%an|%s").strip() == "kb-ai|Add a"
    page.unlink()
    assert commit_all(kb, "Remove a") is not None
    assert "wiki/topic/a.md" not in git(kb, "ls-files")


def test_file_history_and_show_diff(kb):
    page = kb.wiki_dir / "topic" / "a.md"
    page.parent.mkdir()
    page.write_text("first line\n")
    first = commit_all(kb, "Create a")
    page.write_text("first line\nsecond line\n")
    second = commit_all(kb, "Extend a")

    history = file_history(kb, "wiki/topic/a.md")

    assert [(h["sha"], h["subject"]) for h in history] == [
        (second, "Extend a"),
        (first, "Create a"),
    ]
    assert all(h["date"][:4].isdigit() and "T" in h["date"] for h in history)
    diff = show_diff(kb, second, "wiki/topic/a.md")
    assert "+second line" in diff and "-first line" not in diff
    assert "+first line" in show_diff(kb, first, "wiki/topic/a.md")
    assert file_history(kb, "wiki/topic/never.md") == []


def test_show_diff_of_an_unknown_commit(kb):
    with pytest.raises(NotFoundError):
        show_diff(kb, "0123456789abcdef", "log.md")
    with pytest.raises(KbAiError):
        show_diff(kb, "--output=/tmp/x", "log.md")


def test_git_failures_carry_gits_message(kb):
    with pytest.raises(KbAiError, match="not-a-command"):
        git(kb, "not-a-command")


def test_stage_ahead_stages_versioned_paths_only_and_the_commit_takes_them(kb):
    from wiki.git import stage_ahead

    (kb.root / "raw" / "a.md").write_text("a\n")
    (kb.root / "wiki" / "t").mkdir(parents=True)
    (kb.root / "wiki" / "t" / "b.md").write_text("b\n")
    (kb.root / "notes.txt").write_text("the user's own file\n")
    stage_ahead(kb, ["raw", "wiki/t/b.md", "notes.txt", "wiki/t/missing.md"])
    staged = git(kb, "diff", "--cached", "--name-only").split()
    assert staged == ["raw/a.md", "wiki/t/b.md"]
    commit_all(kb, "run")
    assert git(kb, "show", "--name-only", "--format=", "HEAD").split() == staged
    assert "notes.txt" in git(kb, "status", "--porcelain")
