"""`kb-ai init --remote` and `kb-ai status` with the wiki in a git remote: real bare
repositories, the CLI, and the stand-in model over HTTP for the compiles."""

import json
import subprocess

from click.testing import CliRunner

from kb_ai.cli import main
from tests.remotes import bare, refuse_pushes, remote_log, remote_paths


def run(root, *args):
    return CliRunner().invoke(main, ["--kb", str(root), *args], catch_exceptions=False)


def notes(tmp_path, name, text):
    folder = tmp_path / "notes"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    return folder / name


NOTE = "# Nightly backups\n\nBackups of the main database run nightly at 02:00.\n"


def test_init_pushes_a_new_knowledge_base_then_a_second_one_clones_it(tmp_path, fake_model):
    remote = bare(tmp_path / "wiki.git")

    made = run(tmp_path / "a", "init", "--remote", str(remote), "--no-hint")
    cloned = run(tmp_path / "b", "init", "--remote", str(remote), "--no-hint")

    assert made.exit_code == 0, made.output
    assert f"pushed to {remote}" in made.output
    assert remote_log(remote) == ["Create the kb-ai knowledge base"]
    assert cloned.exit_code == 0, cloned.output
    assert f"cloned from {remote}" in cloned.output
    assert (tmp_path / "b" / "kb-ai.toml").is_file()

    # the first compiles: its commit reaches the remote, and the clone's next compile
    # starts from it
    assert run(tmp_path / "a", "compile", str(notes(tmp_path, "b.md", NOTE))).exit_code == 0
    assert remote_log(remote)[0].startswith("compile:")
    second = notes(tmp_path, "c.md", "# Pager alerts\n\nAlerts page the on-call engineer.\n")
    assert run(tmp_path / "b", "compile", str(second)).exit_code == 0
    shown = " ".join(remote_paths(remote, "wiki"))
    assert "nightly-backups" in shown and "pager-alerts" in shown
    status = json.loads(run(tmp_path / "b", "status", "--json").output)
    assert status["remote"]["url"] == str(remote)
    assert status["remote"]["ahead"] == 0 and status["remote"]["error"] is None


def test_a_refusing_remote_is_reported_by_status_and_the_commit_kept(tmp_path, fake_model):
    remote = bare(tmp_path / "wiki.git")
    assert run(tmp_path / "a", "init", "--remote", str(remote)).exit_code == 0
    refuse_pushes(remote, "read-only until Monday")

    compiled = run(tmp_path / "a", "compile", str(notes(tmp_path, "b.md", NOTE)))
    status = run(tmp_path / "a", "status")

    assert compiled.exit_code == 0, compiled.output  # committed here all the same
    line = next(ln for ln in status.output.splitlines() if ln.strip().startswith("remote"))
    assert "1 commit(s) not pushed" in line
    assert "refused the push" in line and "read-only until Monday" in line
    assert remote_log(remote) == ["Create the kb-ai knowledge base"]


def test_a_bad_remote_is_one_clear_line_and_makes_nothing(tmp_path):
    result = run(tmp_path / "kb", "init", "--remote", str(tmp_path / "no-such.git"))

    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"Error: cannot reach the wiki remote {tmp_path / 'no-such.git'}")
    assert not (tmp_path / "kb").exists()


def test_a_remote_that_is_not_a_knowledge_base_is_refused(tmp_path):
    source = tmp_path / "project"
    subprocess.run(["git", "init", "-q", "-b", "main", str(source)], check=True)
    (source / "README.md").write_text("a project\n")
    subprocess.run(["git", "-C", str(source), "add", "."], check=True)
    subprocess.run(
        ["git", "-C", str(source), "-c", "user.name=a", "-c", "user.email=a@b", "commit",
         "-qm", "x"], check=True,
    )  # fmt: skip

    result = run(tmp_path / "kb", "init", "--remote", str(source))

    assert result.exit_code == 2
    assert "not a kb-ai knowledge base" in result.output
    assert not (tmp_path / "kb").exists()


def test_cloning_into_a_directory_in_use_is_refused(tmp_path):
    remote = bare(tmp_path / "wiki.git")
    assert run(tmp_path / "a", "init", "--remote", str(remote)).exit_code == 0
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "mine.txt").write_text("keep me\n")

    result = run(tmp_path / "b", "init", "--remote", str(remote))

    assert result.exit_code == 2 and "not empty" in result.output
    assert (tmp_path / "b" / "mine.txt").read_text() == "keep me\n"


def test_commits_made_while_the_remote_is_gone_are_pushed_by_sync(tmp_path, fake_model):
    remote = bare(tmp_path / "wiki.git")
    assert run(tmp_path / "a", "init", "--remote", str(remote)).exit_code == 0
    away = remote.rename(tmp_path / "moved.git")

    compiled = run(tmp_path / "a", "compile", str(notes(tmp_path, "b.md", NOTE)))
    failed = run(tmp_path / "a", "sync")

    assert compiled.exit_code == 0
    assert "Not pushed yet: cannot reach the wiki remote" in compiled.stderr
    assert failed.exit_code == 1 and "cannot reach the wiki remote" in failed.output

    away.rename(remote)
    synced = run(tmp_path / "a", "sync")

    assert synced.exit_code == 0, synced.output
    assert "pushed 1 commit(s)" in synced.output
    assert remote_log(remote)[0].startswith("compile:")


def test_sync_without_a_remote_says_how_to_follow_one(kb):
    result = run(kb.root, "sync")

    assert result.exit_code == 2
    assert "follows no wiki remote" in result.output and "init --remote" in result.output


def test_init_again_on_a_knowledge_base_that_follows_the_remote_keeps_following(tmp_path):
    remote = bare(tmp_path / "wiki.git")
    assert run(tmp_path / "a", "init", "--remote", str(remote)).exit_code == 0
    assert run(tmp_path / "b", "init", "--remote", str(remote)).exit_code == 0

    again = run(tmp_path / "b", "init", "--remote", str(remote), "--no-hint")

    assert again.exit_code == 0, again.output
    assert f"following {remote}" in again.output


def test_another_knowledge_base_is_not_joined_to_a_remote_that_holds_one(tmp_path, monkeypatch):
    remote = bare(tmp_path / "wiki.git")
    assert run(tmp_path / "a", "init", "--remote", str(remote)).exit_code == 0
    # a history of its own (made in the same second, the two first commits would be one)
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-01-05T10:00:00Z")
    assert run(tmp_path / "mine", "init").exit_code == 0
    monkeypatch.delenv("GIT_COMMITTER_DATE")

    result = run(tmp_path / "mine", "init", "--remote", str(remote))

    assert result.exit_code == 2
    assert "holds another one" in result.output
    assert remote_log(remote) == ["Create the kb-ai knowledge base"]


def test_a_run_held_for_review_reaches_the_remote_when_approved(tmp_path, fake_model):
    remote = bare(tmp_path / "wiki.git")
    assert run(tmp_path / "a", "init", "--remote", str(remote)).exit_code == 0
    held = run(tmp_path / "a", "compile", "--review", "--json", str(notes(tmp_path, "b.md", NOTE)))
    review = json.loads(held.output)["review"]

    assert remote_paths(remote, "wiki") == []  # its articles wait on the review branch
    approved = run(tmp_path / "a", "review", "approve", review.removeprefix("review/"))

    assert approved.exit_code == 0, approved.output
    assert any("nightly-backups" in p for p in remote_paths(remote, "wiki"))
