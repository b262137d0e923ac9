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


def test_what_kb_ai_adds_goes_into_a_pack_and_reads_back_whole(kb):
    """A compile adds a hundred files or more; each as a loose object was a directory,
    a temporary file and a link of its own. Into a pack, the history is the same: the
    objects check out, diffs show text, and git's own maintenance still works."""
    from wiki.git import stage_ahead

    texts = {f"raw/note-{i}.md": f"note {i}\n" + "a line of the note\n" * i for i in range(40)}
    for rel, text in texts.items():
        (kb.root / rel).write_text(text)
    stage_ahead(kb, ["raw"])
    (kb.wiki_dir / "t").mkdir()
    (kb.wiki_dir / "t" / "a.md").write_text("the article\n")
    sha = commit_all(kb, "run")

    counts = dict(line.split(": ") for line in git(kb, "count-objects", "-v").splitlines())
    assert int(counts["in-pack"]) >= len(texts) + 1  # every blob added, in packs
    assert int(counts["count"]) < 10  # loose: the commits and trees only
    assert all(git(kb, "show", f"{sha}:{rel}") == text for rel, text in texts.items())
    (kb.root / "raw" / "note-3.md").write_text("note 3, revised\n")
    assert "+note 3, revised" in git(kb, "diff", "--", "raw/note-3.md")  # text, not binary
    git(kb, "fsck", "--strict")
    git(kb, "gc", "--quiet")
    assert git(kb, "show", f"{sha}:raw/note-39.md") == texts["raw/note-39.md"]


def _packs(kb) -> int:
    counts = dict(line.split(": ") for line in git(kb, "count-objects", "-v").splitlines())
    return int(counts["packs"])


def _many_packs(kb, count: int) -> None:
    """``count`` packs more, each of one ``git add`` (kb-ai's adds write packs)."""
    from wiki.git import stage_ahead

    first = len(list((kb.root / "raw").glob("note-*.md")))
    for i in range(first, first + count):
        (kb.root / "raw" / f"note-{i}.md").write_text(f"note {i}\n")
        stage_ahead(kb, [f"raw/note-{i}.md"])


@pytest.mark.parametrize(
    ("setting", "merged"),
    [
        (None, True),
        ("maintenance.auto=false", False),
        ("gc.auto=0", False),
        ("maintenance.gc.enabled=true", True),  # a maintenance setting: git's own run
    ],
)
def test_a_commit_merges_packs_once_there_are_more_than_git_allows(kb, setting, merged):
    """kb-ai's commits leave git's automatic gc to kb-ai, which runs it when git would:
    more packs than gc.autoPackLimit. A user who turned it off keeps it off; one who
    set git's maintenance up has git run it after the commit, as git does."""
    from wiki.git import _config

    limit = _packs(kb) + 2  # (creating the knowledge base added one)
    git(kb, "config", "gc.autoPackLimit", str(limit))
    git(kb, "config", "gc.autoDetach", "false")  # (gc in the foreground: counted at once)
    if setting is not None:
        git(kb, "config", *setting.split("="))
    _config.cache_clear()  # (read once per process and knowledge base)
    _many_packs(kb, 2)
    commit_all(kb, "at the limit, not over it")
    assert _packs(kb) == limit
    _many_packs(kb, 2)
    sha = commit_all(kb, "over it")
    assert _packs(kb) == (1 if merged else limit + 2)
    assert git(kb, "show", f"{sha}:raw/note-0.md") == "note 0\n"  # (nothing lost)


def _add_level(kb, text: str) -> int:
    """zlib's level group (0 fastest .. 3 best) of the blob one kb-ai `git add` of
    ``text`` wrote into its pack (the FLEVEL bits of the stream's header)."""
    from wiki.git import stage_ahead

    pack_dir = kb.root / ".git" / "objects" / "pack"
    before = set(pack_dir.glob("*.pack"))
    (kb.root / "index" / "master-index.md").write_text(text)
    stage_ahead(kb, ["index/master-index.md"])
    (pack,) = set(pack_dir.glob("*.pack")) - before
    data = pack.read_bytes()
    assert data[:4] == b"PACK" and int.from_bytes(data[8:12], "big") == 1
    at = 12
    while data[at] & 0x80:  # the object's type and size, 7 bits a byte
        at += 1
    cmf, flg = data[at + 1], data[at + 2]
    assert cmf & 0x0F == 8 and (cmf << 8 | flg) % 31 == 0  # a zlib stream (deflate)
    return flg >> 6


@pytest.mark.parametrize(
    ("setting", "level"), [(None, 0), ("core.compression=9", 3), ("pack.compression=6", 2)]
)
def test_kb_ai_adds_compress_fast_unless_the_user_chose_a_level(kb, setting, level):
    """A large wiki's indexes are megabytes, rewritten by every compile: kb-ai's adds
    compress them at zlib's fastest level (half the time of git's default, a fifth more
    pack), unless the user set git's compression, which they get."""
    from wiki.git import _config

    if setting is not None:
        git(kb, "config", *setting.split("="))
    _config.cache_clear()  # (read once per process and knowledge base)
    text = "".join(f"- [Article {i}](wiki/topic/article-{i}.md): about {i}\n" for i in range(3000))
    assert _add_level(kb, text) == level
    sha = commit_all(kb, "the index")
    assert git(kb, "show", f"{sha}:index/master-index.md") == text
