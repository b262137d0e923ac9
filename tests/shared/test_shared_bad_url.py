"""A wrong or unreachable ``database_url`` stops every command that uses it at start, with
one line saying what is wrong and what to do (never a traceback, never the password),
before anything is written; a database of another knowledge base is refused."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from wiki import KnowledgeBase

ROOT = Path(__file__).resolve().parents[2]
# what each command is run with; serve and worker would run until stopped if not refused
COMMANDS = {
    "status": ["status"],
    "compile": ["compile", "NOTE"],
    "worker": ["worker"],
    "serve": ["serve", "--port", "0"],
}
# the URL, what the line says, the exit status (2: the setting is wrong; 1: the server
# did not answer, which may pass)
BAD = {
    "wrong scheme": ("mysql://root@127.0.0.1/kb", "database_url must be a PostgreSQL URL", 2),
    "unreachable port": (
        "postgresql://root@127.0.0.1:1/kb",
        "Could not reach the shared database postgresql://root@127.0.0.1:1/kb",
        1,
    ),
    "unknown host": (
        "postgresql://root@no-such-host.invalid/kb",
        "Could not reach the shared database postgresql://root@no-such-host.invalid/kb",
        1,
    ),
    "no database name": ("postgresql://root@127.0.0.1:5432", "names no database", 2),
    "port out of range": (
        "postgresql://root@127.0.0.1:99999/kb",
        "has a port that is not a number from 1 to 65535",
        2,
    ),
}


def run_kb_ai(kb, args, url, tmp_path):
    note = tmp_path / "note.md"
    note.write_text("# Release train\n\nReleases leave every Tuesday.\n", encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "KB_AI_DIR": str(kb.root),
        "KB_AI_DATABASE_URL": url,
        "KB_AI_MODEL": "openai/fake",
        "KB_AI_API_BASE": "http://127.0.0.1:9/v1",  # never reached: refused before
        "KB_AI_API_KEY": "x",
        "KB_AI_NOTICE_SHOWN": "1",
    }
    args = [str(note) if a == "NOTE" else a for a in args]
    return subprocess.run(
        [sys.executable, "-m", "kb_ai", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def one_line(done):
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("Error: ") and "Traceback" not in done.stderr
    return lines[0]


@pytest.mark.parametrize("bad", list(BAD), ids=list(BAD))
@pytest.mark.parametrize("command", list(COMMANDS), ids=list(COMMANDS))
def test_a_bad_database_url_stops_the_command_at_start_with_one_line(kb, tmp_path, command, bad):
    url, said, status = BAD[bad]
    head = kb.root.joinpath(".git", "HEAD").read_text()
    done = run_kb_ai(kb, COMMANDS[command], url, tmp_path)
    assert done.returncode == status, done.stderr
    assert said in one_line(done)
    assert kb.root.joinpath(".git", "HEAD").read_text() == head
    assert not list(kb.raw_dir.glob("*.md"))  # nothing compiled, nothing half-written


def test_a_missing_database_is_named(kb, tmp_path, pg_url):
    done = run_kb_ai(kb, ["status"], pg_url + "_missing", tmp_path)
    assert done.returncode == 1
    line = one_line(done)
    assert f'database "{pg_url.rsplit("/", 1)[1]}_missing" does not exist' in line
    assert "createdb" in line  # what to do


def test_a_password_is_not_printed(kb, tmp_path):
    done = run_kb_ai(kb, ["worker"], "postgresql://root:s3cret@127.0.0.1:1/kb", tmp_path)
    assert done.returncode == 1 and "s3cret" not in done.stderr + done.stdout
    assert "postgresql://root:***@127.0.0.1:1/kb" in one_line(done)


def test_a_database_of_another_knowledge_base_is_refused_by_every_command(
    kb, tmp_path, pg_url, monkeypatch
):
    ours = run_kb_ai(kb, ["status"], pg_url, tmp_path)  # the first to use it names it
    assert ours.returncode == 0, ours.stderr
    for name in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):  # made another day: another id
        monkeypatch.setenv(name, "2025-01-01T09:00:00+00:00")
    other = KnowledgeBase.init(tmp_path / "other")
    for args in COMMANDS.values():
        done = run_kb_ai(other, args, pg_url, tmp_path)
        assert done.returncode == 2, done.stderr
        assert "belongs to another knowledge base" in one_line(done)
    again = run_kb_ai(kb, ["status"], pg_url, tmp_path)  # still the first one's
    assert again.returncode == 0, again.stderr
