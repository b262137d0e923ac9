"""Agent hooks: which KB a session belongs to, the snapshot, capture, fail-open, install."""

import json
import os
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from compiler.queue import TaskQueue
from kb_ai.cli.agent_hooks import (
    build_snapshot,
    find_kb,
    install,
    installed_events,
    run_hook,
    settings_path,
    uninstall,
)
from wiki import Article, KnowledgeBase, build_catalog, open_state, write_article, write_indexes

TRANSCRIPTS = (
    Path(__file__).resolve().parents[2].parent / "shared" / "data" / "transcripts" / "claude_code"
)


def make_kb(root, articles=()):
    kb = KnowledgeBase.init(root)
    for path, title, summary in articles:
        kind = path.split("/")[1]
        write_article(
            kb,
            Article(path, title, kind, summary, [], [], "2026-01-01", "2026-01-01", f"{summary}\n"),
        )
    write_indexes(kb, build_catalog(kb))
    return kb


LESSONS = [
    (
        "wiki/pitfall/flaky-claim-test.md",
        "Flaky claim test",
        "Run the jobs tests with --count 50 before pushing.",
    ),
    (
        "wiki/convention/deploy-from-main.md",
        "Deploy from main only",
        "Deploys go out from main through the deploy workflow.",
    ),
    ("wiki/concept/jobs-table.md", "Jobs table", "Background jobs live in PostgreSQL."),
]


def hook(*args, stdin="", env=None, cwd=None, timeout=30):
    return subprocess.run(
        [sys.executable, "-P", "-m", "kb_ai", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=timeout,
    )


def git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_the_kb_is_found_by_walking_up_to_a_marker_and_worktrees_share_it(tmp_path):
    kb = make_kb(tmp_path / "kb")
    repo = tmp_path / "repo"
    (repo / "src" / "deep").mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=repo)
    (repo / ".kb-ai").write_text(f'kb = "{kb.root}"\n')
    (repo / "README").write_text("x")
    git("-c", "user.name=t", "-c", "user.email=t@t", "add", ".", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x", cwd=repo)
    assert find_kb(repo / "src" / "deep", {}) == kb.root
    # a worktree whose checkout lacks the (untracked, say) marker still maps to the main repository's KB
    git("rm", "-q", "--cached", ".kb-ai", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "untrack", cwd=repo)
    git("worktree", "add", "-q", str(tmp_path / "wt"), cwd=repo)
    assert not (tmp_path / "wt" / ".kb-ai").exists()
    assert find_kb(tmp_path / "wt", {}) == kb.root
    # the walk stops at a repository root; KB_AI_DIR comes last
    other = tmp_path / "other"
    other.mkdir()
    git("init", "-q", cwd=other)
    assert find_kb(other, {}) is None
    assert find_kb(other, {"KB_AI_DIR": str(kb.root)}) == kb.root
    assert find_kb(kb.root / "wiki", {}) == kb.root


def test_the_snapshot_is_short_lists_lessons_and_names_the_ask_tool(tmp_path):
    kb = make_kb(tmp_path / "kb", LESSONS)
    text = build_snapshot(kb)
    lines = text.splitlines()
    assert len(lines) <= 5 and len(text.encode()) <= 1024
    assert "`ask` MCP tool" in lines[0]
    assert any("Flaky claim test" in line for line in lines)
    assert any("Deploy from main only" in line for line in lines)
    assert not any(
        "Jobs table" in line for line in lines
    )  # concepts are for `ask`, not the snapshot
    many = make_kb(
        tmp_path / "many", [(f"wiki/pitfall/p{i}.md", f"Pitfall {i}", "x" * 300) for i in range(20)]
    )
    big = build_snapshot(many)
    assert len(big.splitlines()) <= 5 and len(big.encode()) <= 1024


def test_session_start_is_byte_identical_within_a_session(tmp_path):
    kb = make_kb(tmp_path / "kb", LESSONS)
    event = json.dumps({"session_id": "s1", "cwd": str(kb.root), "hook_event_name": "SessionStart"})
    first = hook("hook", "session-start", stdin=event)
    assert first.returncode == 0 and "Flaky claim test" in first.stdout
    write_article(
        kb,
        Article(
            "wiki/pitfall/new.md",
            "A new pitfall",
            "pitfall",
            "Fresh.",
            [],
            [],
            "2026-01-02",
            "2026-01-02",
            "Fresh.\n",
        ),
    )
    write_indexes(kb, build_catalog(kb))
    again = hook("hook", "session-start", stdin=event)
    assert again.stdout == first.stdout  # same session: same bytes, the prompt cache stays valid
    other = hook("hook", "session-start", stdin=event.replace("s1", "s2"))
    assert "A new pitfall" in other.stdout


@pytest.mark.parametrize("setup", ["no kb", "corrupt kb", "bad json", "not a dict"])
def test_hooks_fail_open(tmp_path, setup):
    cwd = tmp_path / "project"
    cwd.mkdir()
    stdin = json.dumps(
        {
            "session_id": "s",
            "cwd": str(cwd),
            "transcript_path": str(tmp_path / "t.jsonl"),
            "prompt": "deploy?",
        }
    )
    if setup == "corrupt kb":
        kb = make_kb(cwd, LESSONS)
        (kb.state_dir / "state.db").write_bytes(b"this is not sqlite" * 100)
        kb.master_index_path.write_bytes(b"\xff\xfe garbage")
    elif setup == "bad json":
        stdin = "{not json"
    elif setup == "not a dict":
        stdin = "[1, 2]"
    for name in ("session-start", "session-end", "prompt"):
        result = hook("hook", name, stdin=stdin, cwd=cwd)
        assert result.returncode == 0, result.stderr
        assert result.stdout == ""


def test_a_stuck_hook_is_ended_in_time_with_nothing_injected(tmp_path):
    kb = make_kb(tmp_path / "kb", LESSONS)
    code = (
        "import sys, time\n"
        "import kb_ai.cli.agent_hooks.run as r\n"
        "r.session_snapshot = lambda kb, s: time.sleep(30) or 'late'\n"
        "r.session_start = lambda kb, e: r.session_snapshot(kb, 's')\n"
        "from kb_ai.cli import main\n"
        "main(['--kb', sys.argv[1], 'hook', 'session-start'])\n"
    )
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-c", code, str(kb.root)],
        input="{}",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0 and result.stdout == ""
    assert time.monotonic() - started < 10  # ended by its own deadline, not by the 30 s sleep


def test_prompt_hint_is_one_line_with_a_count_and_no_wiki_text(tmp_path):
    kb = make_kb(tmp_path / "kb", LESSONS)
    from wiki.indexing import refresh_search_index

    with closing(open_state(kb)) as conn:
        refresh_search_index(kb, conn)
    out = run_hook(
        "prompt",
        json.dumps({"prompt": "how do deploys work from main?", "cwd": str(kb.root)}),
        agent="claude-code",
    )
    assert out.count("\n") == 0 and out.startswith("kb-ai: ") and "page" in out
    assert "workflow" not in out and "Deploy from main only" not in out
    assert (
        run_hook("prompt", json.dumps({"prompt": "zzzz qqqq", "cwd": str(kb.root)}), agent="codex")
        == ""
    )


def test_session_end_queues_the_transcript_and_a_newer_one_replaces_it(tmp_path):
    kb = make_kb(tmp_path / "kb")
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(
        json.dumps({"type": "user", "message": {"role": "user", "content": "hello"}}) + "\n"
    )
    event = json.dumps(
        {"session_id": "abc123", "transcript_path": str(transcript), "cwd": str(kb.root)}
    )
    # keep the background worker from starting: pretend one is alive
    from wiki.lock import KbLock

    alive = KbLock(kb.state_dir / "worker.lock")
    alive.acquire(shared=True)
    try:
        assert run_hook("session-end", event, agent="codex") == ""
        transcript.write_text(
            transcript.read_text()
            + json.dumps({"type": "user", "message": {"role": "user", "content": "more"}})
            + "\n"
        )
        run_hook("session-end", event, agent="codex")
    finally:
        alive.release()
    with closing(open_state(kb)) as conn:
        tasks = TaskQueue(kb, conn).list()
    assert len(tasks) == 1
    assert tasks[0]["origin"] == "transcript:codex:abc123" and tasks[0]["kind"] == "transcript"
    with closing(open_state(kb)) as conn:
        assert b"more" in TaskQueue(kb, conn).read_content(tasks[0]["id"])


@pytest.mark.skipif(not TRANSCRIPTS.is_dir(), reason="../shared/data/transcripts is not present")
def test_a_finished_session_is_compiled_in_the_background(tmp_path, fake_model):
    kb = make_kb(tmp_path / "kb")
    from compiler.sources import source_from_text
    from kb_ai.errors import SourceError

    def has_conversation(path):
        try:
            source_from_text("t", "", path.read_text(), chunk_chars=10**6, max_bytes=10**8)
        except SourceError:
            return False
        return True

    transcript = next(
        p
        for p in sorted(TRANSCRIPTS.glob("*.jsonl"), key=lambda p: p.stat().st_size)
        if has_conversation(p)
    )
    event = json.dumps(
        {
            "session_id": "real-1",
            "transcript_path": str(transcript),
            "cwd": str(kb.root),
            "hook_event_name": "SessionEnd",
        }
    )
    started = time.monotonic()
    result = hook("hook", "session-end", "--agent", "claude-code", stdin=event)
    assert result.returncode == 0 and result.stdout == ""
    assert time.monotonic() - started < 10
    deadline = time.monotonic() + 120
    state = None
    while time.monotonic() < deadline:
        with closing(open_state(kb)) as conn:
            state = TaskQueue(kb, conn).list()[0]["state"]
        if state in ("done", "failed"):
            break
        time.sleep(0.3)
    with closing(open_state(kb)) as conn:
        assert state == "done", TaskQueue(kb, conn).list()[0]["error"]
    assert list((kb.root / "raw").glob("*.md"))
    assert list((kb.root / "wiki").rglob("*.md"))


def test_install_and_uninstall_leave_the_agents_settings_as_they_were(tmp_path):
    project = tmp_path / "project"
    for agent in ("claude-code", "codex"):
        path = settings_path(agent, project)
        path.parent.mkdir(parents=True, exist_ok=True)
        original = {
            "permissions": {"allow": ["Bash(ls:*)"]},
            "hooks": {
                "SessionStart": [
                    {"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}
                ]
            },
        }
        path.write_text(json.dumps(original, indent=4))
        added = install(agent, path, prompt_hint=True)
        assert "SessionStart" in added and "UserPromptSubmit" in added
        assert install(agent, path) == []  # idempotent
        data = json.loads(path.read_text())
        assert data["permissions"] == original["permissions"]
        assert data["hooks"]["SessionStart"][0] == original["hooks"]["SessionStart"][0]
        assert set(installed_events(path)) >= {"SessionStart", "PreCompact"}
        assert uninstall(path) >= 3
        assert json.loads(path.read_text()) == original
        assert installed_events(path) == []


def test_hooks_install_cli_writes_a_marker_and_status_reports_it(tmp_path):
    kb = make_kb(tmp_path / "kb")
    project = tmp_path / "project"
    project.mkdir()
    result = hook(
        "--kb",
        str(kb.root),
        "hooks",
        "install",
        "--agent",
        "claude-code",
        "--project",
        str(project),
    )
    assert result.returncode == 0, result.stderr
    assert find_kb(project, {}) == kb.root
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert "kb-ai" in settings["hooks"]["SessionEnd"][0]["hooks"][0]["command"]
    status = hook("hooks", "status", "--project", str(project))
    assert "SessionStart" in status.stdout and str(kb.root) in status.stdout
    bad = hook("hooks", "install", "--agent", "claude-code", "--project", str(tmp_path / "nokb"))
    assert bad.returncode == 2 and "No knowledge base" in bad.stderr
