"""Agent capture end to end: hook -> spool -> worker -> one compile per new turn, with no
session lost to a busy machine, a killed worker or a model that was down."""

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import closing, contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

from compiler.captures import take_spool
from compiler.queue import TaskQueue
from compiler.worker import Worker
from kb_ai.cli import main
from kb_ai.hooks import spool
from kb_ai.hooks.run import POSIX_SH, SHELL_HOOK, run_hook, shell_hook_usable
from kb_ai.settings import load_settings
from tests.conftest import shared_data, skip_without_shared_data
from tests.fakes.kb_responder import respond, stage_of
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from wiki import KnowledgeBase, all_sources, open_state
from wiki.lock import KbLock

DATA = shared_data("transcripts")


def rollout_line(kind, payload, t="2026-03-01T10:00:00.000Z"):
    return json.dumps({"timestamp": t, "type": kind, "payload": payload}) + "\n"


def codex_turn(n: int, tag: str = "") -> str:
    def msg(role, text, block):
        return rollout_line(
            "response_item",
            {"type": "message", "role": role, "content": [{"type": block, "text": text}]},
        )

    return msg("user", f"Turn {n}: make the widget{n} cache expire{tag}.", "input_text") + msg(
        "assistant",
        f"Done for widget{n}: the cache of widget{n} now expires after {n} minutes; "
        f"decided to keep widget{n} keys short.",
        "output_text",
    )


def codex_session(path: Path, session_id: str, turns: int) -> Path:
    meta = rollout_line(
        "session_meta", {"id": session_id, "timestamp": "2026-03-01T10:00:00Z", "cwd": "/w"}
    )
    tag = f" for {session_id}"  # no two sessions alike (identical prompts hit the call cache)
    path.write_text(meta + "".join(codex_turn(n, tag) for n in range(1, turns + 1)))
    return path


def settings_for(kb, server, **over):
    values = {
        "model": "openai/fake-model",
        "api_base": server.base_url,
        "api_key": "sk-test",
        "session_quiet_seconds": 0,
        "capture_retry_seconds": 0,
        "max_retries": 0,
        "retry_backoff": 0.01,
        **over,
    }
    return load_settings(kb.root, values, environ={})


def drain(kb, settings) -> int:
    return asyncio.run(Worker(kb, settings).drain())


@contextmanager
def worker_running(kb):
    """Pretend a worker runs (it holds the worker lock): hooks start none."""
    lock = KbLock(kb.state_dir / "worker.lock")
    lock.acquire(shared=True)
    try:
        yield
    finally:
        lock.release()


def end_event(kb, transcript, session_id, event="SessionEnd"):
    return json.dumps(
        {
            "session_id": session_id,
            "transcript_path": str(transcript),
            "cwd": str(kb.root),
            "hook_event_name": event,
        }
    )


def tasks_of(kb):
    with closing(open_state(kb)) as conn:
        return TaskQueue(kb, conn).list(limit=1000)


def session_sources(kb, key):
    with closing(open_state(kb)) as conn:
        return {o: r for o, r in all_sources(conn).items() if o.startswith(key)}


def commits(kb) -> int:
    out = subprocess.run(
        ["git", "rev-list", "--count", "HEAD"], cwd=kb.root, capture_output=True, text=True
    )
    return int(out.stdout.strip() or 0) if out.returncode == 0 else 0


@pytest.fixture
def server():
    with FakeOpenAIServer(respond) as s:
        yield s


def extracts(server) -> list[dict]:
    return [r for r in server.requests if stage_of(r) == "extract"]


def test_a_growing_codex_session_compiles_only_each_new_turn(tmp_path, server):
    kb = KnowledgeBase.init(tmp_path / "kb")
    settings = settings_for(kb, server)
    rollout = tmp_path / "rollout-2026-03-01-abc.jsonl"
    with worker_running(kb):
        for turns in range(1, 6):  # Codex's Stop after every turn
            codex_session(rollout, "sess-grow", turns)
            before, commits_before = len(extracts(server)), commits(kb)
            run_hook("session-end", end_event(kb, rollout, "sess-grow", "Stop"), agent="codex")
            drain(kb, settings)
            new = extracts(server)[before:]
            assert len(new) == 1  # one extract call, for the new turn only
            prompt = json.dumps(new[0]["messages"])
            assert f"widget{turns} cache" in prompt
            assert turns == 1 or "Done for widget1" not in prompt
            assert commits(kb) == commits_before + 1  # one commit per compile
        # a Stop with nothing new compiles nothing and is no failure
        run_hook("session-end", end_event(kb, rollout, "sess-grow", "Stop"), agent="codex")
        drain(kb, settings)
    assert len(extracts(server)) == 5
    parts = session_sources(kb, "session:codex:sess-grow#")
    # a part covers the turns it added: a request and its answer each time
    assert set(parts) == {f"session:codex:sess-grow#{2 * n - 2}-{2 * n}" for n in range(1, 6)}
    assert all(t["state"] == "done" for t in tasks_of(kb))


def test_a_captured_session_is_committed_with_its_agent_as_author(tmp_path, server):
    kb = KnowledgeBase.init(tmp_path / "kb")
    rollout = tmp_path / "rollout-2026-03-01-who.jsonl"
    with worker_running(kb):
        codex_session(rollout, "sess-who", 1)
        run_hook("session-end", end_event(kb, rollout, "sess-who", "Stop"), agent="codex")
        drain(kb, settings_for(kb, server))
    last = subprocess.run(
        ["git", "log", "-1", "--format=%an|%ae|%cn"], cwd=kb.root, capture_output=True, text=True
    )
    assert last.stdout.strip() == "codex||kb-ai"


def test_an_active_session_waits_for_the_quiet_period_and_its_end_does_not(tmp_path, server):
    kb = KnowledgeBase.init(tmp_path / "kb")
    settings = settings_for(kb, server, session_quiet_seconds=3600)
    rollout = codex_session(tmp_path / "r.jsonl", "sess-q", 2)
    with worker_running(kb):
        for _ in range(3):
            run_hook("session-end", end_event(kb, rollout, "sess-q", "Stop"), agent="codex")
    with closing(open_state(kb)) as conn:
        held = take_spool(kb, conn, settings)
    # the same transcript three times: one record, held while the session may go on
    assert held.waiting == 1 and held.taken == 0 and tasks_of(kb) == []
    codex_session(rollout, "sess-q", 3)
    with worker_running(kb):
        run_hook("session-end", end_event(kb, rollout, "sess-q", "SessionEnd"), agent="codex")
    with closing(open_state(kb)) as conn:
        taken = take_spool(kb, conn, settings)
    assert taken.taken == 1 and taken.waiting == 0
    assert len(tasks_of(kb)) == 1 and spool.pending(kb.state_dir) == []


def test_a_model_down_at_the_first_drain_compiles_at_the_second(tmp_path):
    down = {"on": True}

    def flaky(request):
        return Reply(status=503, content="down") if down["on"] else respond(request)

    kb = KnowledgeBase.init(tmp_path / "kb")
    rollout = codex_session(tmp_path / "r.jsonl", "sess-down", 2)
    with FakeOpenAIServer(flaky) as server:
        settings = settings_for(kb, server)
        with worker_running(kb):
            run_hook("session-end", end_event(kb, rollout, "sess-down"), agent="codex")
        drain(kb, settings)
        [task] = tasks_of(kb)
        assert task["state"] == "failed" and task["error"]
        status = CliRunner().invoke(main, ["--kb", str(kb.root), "hooks", "status"])
        assert "1 failed" in status.output and task["id"] in status.output
        down["on"] = False
        drain(kb, settings)  # the backoff (0 s here) has passed: retried
    [task] = tasks_of(kb)
    assert task["state"] == "done", task["error"]
    assert session_sources(kb, "session:codex:sess-down#")
    assert list((kb.root / "wiki").rglob("*.md"))


def test_failed_captures_wait_for_their_backoff(tmp_path):
    kb = KnowledgeBase.init(tmp_path / "kb")
    rollout = codex_session(tmp_path / "r.jsonl", "sess-b", 1)
    with FakeOpenAIServer(lambda r: Reply(status=503)) as server:
        settings = settings_for(kb, server, capture_retry_seconds=3600)
        with worker_running(kb):
            run_hook("session-end", end_event(kb, rollout, "sess-b"), agent="codex")
        drain(kb, settings)
        calls = len(server.requests)
        drain(kb, settings)
        assert len(server.requests) == calls  # not due yet: not retried
        result = CliRunner().invoke(main, ["--kb", str(kb.root), "hooks", "retry"])
        assert result.exit_code == 0 and "1 session(s)" in result.output
    assert tasks_of(kb)[0]["state"] in ("queued", "running", "failed", "done")


def test_a_record_claimed_by_a_dead_process_is_taken_once(tmp_path, server):
    kb = KnowledgeBase.init(tmp_path / "kb")
    rollout = codex_session(tmp_path / "r.jsonl", "sess-crash", 1)
    with worker_running(kb):
        run_hook("session-end", end_event(kb, rollout, "sess-crash"), agent="codex")
    [record] = spool.pending(kb.state_dir)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True
    )
    cur = kb.state_dir / "spool" / "cur"
    cur.mkdir(exist_ok=True)
    claimed = cur / f"{record.name}.{int(dead.stdout)}"
    os.rename(record, claimed)  # a worker claimed it, then died
    copy = claimed.read_bytes()
    settings = settings_for(kb, server)
    drain(kb, settings)
    assert len(tasks_of(kb)) == 1 and tasks_of(kb)[0]["state"] == "done"
    # died after its commit, before deleting the record: the record comes back, counts once
    (kb.state_dir / "spool" / "new" / record.name).write_bytes(copy)
    drain(kb, settings)
    assert len(tasks_of(kb)) == 1 and spool.pending(kb.state_dir) == []
    assert len(extracts(server)) == 1


def test_a_worker_killed_mid_drain_loses_nothing(tmp_path):
    def slow(request):
        reply = respond(request)
        return Reply(reply.content, delay=0.3) if stage_of(request) == "extract" else reply

    kb = KnowledgeBase.init(tmp_path / "kb")
    with FakeOpenAIServer(slow) as server:
        (kb.root / "kb-ai.toml").write_text(
            kb.config_path.read_text()
            + f'\nmodel = "openai/fake-model"\napi_base = "{server.base_url}"\napi_key = "sk"\n'
            "session_quiet_seconds = 0\ncapture_retry_seconds = 0\n"
        )
        with worker_running(kb):
            for i in range(4):
                rollout = codex_session(tmp_path / f"r{i}.jsonl", f"sess-kill-{i}", 2)
                run_hook("session-end", end_event(kb, rollout, f"sess-kill-{i}"), agent="codex")
        worker = subprocess.Popen(
            [sys.executable, "-P", "-m", "kb_ai", "--kb", str(kb.root), "worker", "--drain"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not extracts(server):
            time.sleep(0.05)
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
        assert extracts(server), "the worker never reached the model"
        settings = load_settings(kb.root, environ={})
        drain(kb, settings)
    tasks = tasks_of(kb)
    assert len(tasks) == 4 and all(t["state"] == "done" for t in tasks), tasks
    assert spool.pending(kb.state_dir) == []
    for i in range(4):
        assert len(session_sources(kb, f"session:codex:sess-kill-{i}#")) == 1


def claude_sessions() -> list[Path]:
    folder = DATA / "claude_code"
    return sorted(folder.glob("*.jsonl"), key=lambda p: p.stat().st_size) if folder.is_dir() else []


def test_the_same_session_through_the_hook_and_compile_is_one_source(tmp_path, server):
    from compiler.transcripts import parse

    sessions = [p for p in claude_sessions() if not parse(p.read_bytes(), p.name).is_empty()]
    if not sessions:
        skip_without_shared_data(DATA / "claude_code")
    path = sessions[0]
    session_id = parse(path.read_bytes(), path.name).session_id
    kb = KnowledgeBase.init(tmp_path / "kb")
    settings = settings_for(kb, server)
    with worker_running(kb):
        run_hook("session-end", end_event(kb, path, session_id), agent="claude-code")
    drain(kb, settings)
    env = {
        "KB_AI_MODEL": "openai/fake-model",
        "KB_AI_API_BASE": server.base_url,
        "KB_AI_API_KEY": "sk",
    }
    calls = len(server.requests)
    result = CliRunner().invoke(main, ["--kb", str(kb.root), "compile", str(path)], env=env)
    assert result.exit_code == 0, result.output
    assert len(server.requests) == calls  # recognised as compiled: nothing asked again
    with closing(open_state(kb)) as conn:
        origins = list(all_sources(conn))
    assert origins and all(o.startswith(f"session:claude-code:{session_id}#") for o in origins)
    assert len(origins) == 1
    with closing(open_state(kb)) as conn:  # the web upload of the same session, re-saved
        content = path.read_bytes() + b"\n"
        TaskQueue(kb, conn).submit("upload", content, filename="s.jsonl", kind="note")
    drain(kb, settings)
    assert len(server.requests) == calls
    upload = next(t for t in tasks_of(kb) if t["title"] == "upload")
    assert upload["state"] == "done" and "skipped" in upload["result"]


def test_a_session_with_nothing_to_learn_is_skipped_not_failed(tmp_path, server):
    path = DATA / "claude_code" / "9b92ce83-1981-4cdc-9f5d-7f66c4b10389.jsonl"
    skip_without_shared_data(path)
    kb = KnowledgeBase.init(tmp_path / "kb")
    env = {"KB_AI_MODEL": "openai/fake-model", "KB_AI_API_BASE": server.base_url}
    for _ in range(2):
        result = CliRunner().invoke(main, ["--kb", str(kb.root), "compile", str(path)], env=env)
        assert result.exit_code == 0, result.output
    assert server.requests == []
    with worker_running(kb):
        run_hook("session-end", end_event(kb, path, "9b92ce83"), agent="claude-code")
    drain(kb, settings_for(kb, server))
    [task] = tasks_of(kb)
    assert task["state"] == "done" and "skipped" in task["result"]


def burn(seconds: float) -> subprocess.Popen:
    """A CPU-bound process that stops by itself."""
    code = f"import time\nend = time.time() + {seconds}\nwhile time.time() < end: pass\n"
    return subprocess.Popen([sys.executable, "-c", code])


HOOK_COMMANDS = {  # what `hooks install` writes: the shell one where /bin/sh exists
    "python": [sys.executable, "-P", "-m", "kb_ai.hooks", "session-end", "--agent", "codex"],
    "sh": [
        POSIX_SH,
        str(SHELL_HOOK),
        "--python",
        sys.executable,
        "session-end",
        "--agent",
        "codex",
    ],
}


@pytest.mark.slow  # 50 interpreter starts beside two CPU burners: half a minute here
@pytest.mark.parametrize("kind", sorted(HOOK_COMMANDS))
def test_fifty_sessions_ended_on_a_busy_machine_are_all_spooled_and_compiled_once(
    tmp_path, server, kind
):
    if kind == "sh" and not shell_hook_usable():
        pytest.skip("no POSIX /bin/sh here")
    kb = KnowledgeBase.init(tmp_path / "kb")
    burners = [burn(120), burn(120)]
    try:
        with worker_running(kb):
            for i in range(50):
                rollout = codex_session(tmp_path / f"r{i}.jsonl", f"sess-busy-{i}", 1)
                hook = subprocess.run(
                    HOOK_COMMANDS[kind],
                    input=end_event(kb, rollout, f"sess-busy-{i}"),
                    capture_output=True,
                    text=True,
                    timeout=60,
                    cwd=kb.root,
                )
                assert hook.returncode == 0 and hook.stdout == ""
    finally:
        for b in burners:
            b.kill()
            b.wait()
    assert len(spool.pending(kb.state_dir)) == 50
    drain(kb, settings_for(kb, server))
    tasks = tasks_of(kb)
    assert len(tasks) == 50 and all(t["state"] == "done" for t in tasks)
    assert len(extracts(server)) == 50  # each compiled exactly once
    for i in range(50):
        assert len(session_sources(kb, f"session:codex:sess-busy-{i}#")) == 1


def test_a_transcript_not_there_yet_is_read_again_after_the_backoff(tmp_path, server):
    kb = KnowledgeBase.init(tmp_path / "kb")
    rollout = tmp_path / "late.jsonl"
    with worker_running(kb):
        run_hook("session-end", end_event(kb, rollout, "sess-late"), agent="codex")
    drain(kb, settings_for(kb, server, capture_retry_seconds=3600))
    assert tasks_of(kb) == []
    status = CliRunner().invoke(main, ["--kb", str(kb.root), "hooks", "status"])
    assert "1 failed" in status.output and "late.jsonl" in status.output
    codex_session(rollout, "sess-late", 1)  # the agent finished writing it
    drain(kb, settings_for(kb, server, capture_retry_seconds=3600))
    assert tasks_of(kb) == []  # its backoff has not passed
    drain(kb, settings_for(kb, server, capture_retry_seconds=0))
    [task] = tasks_of(kb)
    assert task["state"] == "done", task["error"]
    status = CliRunner().invoke(main, ["--kb", str(kb.root), "hooks", "status"])
    assert "0 failed" in status.output


def claude_records(session_id: str, turns: range) -> list[str]:
    out = []
    for n in turns:
        out.append(
            json.dumps(
                {
                    "type": "user",
                    "message": {"role": "user", "content": f"Rename the gadget{n} flag."},
                    "uuid": f"u{n}",
                    "sessionId": session_id,
                    "timestamp": "2026-03-01T10:00:00Z",
                }
            )
        )
        out.append(
            json.dumps(
                {
                    "type": "assistant",
                    "message": {
                        "role": "assistant",
                        "id": f"m{n}",
                        "content": [{"type": "text", "text": f"Renamed gadget{n}; tests pass."}],
                    },
                    "uuid": f"a{n}",
                    "sessionId": session_id,
                }
            )
        )
    return out


def test_a_resumed_claude_code_session_compiles_only_what_follows(tmp_path, server):
    """A resumed session's file starts with the earlier conversation (under the first
    session's id) and goes on under a new id: it is the same session, grown."""
    kb = KnowledgeBase.init(tmp_path / "kb")
    settings = settings_for(kb, server)
    first = tmp_path / "first.jsonl"
    first.write_text("\n".join(claude_records("sess-first", range(1, 3))) + "\n")
    resumed = tmp_path / "resumed.jsonl"
    resumed.write_text(
        "\n".join(
            claude_records("sess-first", range(1, 3)) + claude_records("sess-resumed", range(3, 4))
        )
        + "\n"
    )
    with worker_running(kb):
        run_hook("session-end", end_event(kb, first, "sess-first"), agent="claude-code")
    drain(kb, settings)
    before = len(extracts(server))
    with worker_running(kb):
        run_hook("session-end", end_event(kb, resumed, "sess-resumed"), agent="claude-code")
    drain(kb, settings)
    new = extracts(server)[before:]
    assert len(new) == 1
    prompt = json.dumps(new[0]["messages"])
    assert "gadget3" in prompt and "Renamed gadget1" not in prompt
    assert set(session_sources(kb, "session:claude-code:")) == {
        "session:claude-code:sess-first#0-4",
        "session:claude-code:sess-first#4-6",
    }


def test_a_second_event_with_nothing_new_spools_nothing(tmp_path):
    kb = KnowledgeBase.init(tmp_path / "kb")
    rollout = codex_session(tmp_path / "r.jsonl", "sess-twice", 1)
    with worker_running(kb):
        run_hook("session-end", end_event(kb, rollout, "sess-twice", "PreCompact"), agent="codex")
        run_hook("session-end", end_event(kb, rollout, "sess-twice"), agent="codex")
        assert len(spool.pending(kb.state_dir)) == 1
        codex_session(rollout, "sess-twice", 2)  # it grew: spooled again
        run_hook("session-end", end_event(kb, rollout, "sess-twice"), agent="codex")
        assert len(spool.pending(kb.state_dir)) == 2
