"""The capture hook in POSIX sh (kb_ai/hooks/kb-ai-hook.sh): what it spools is drained
and compiled exactly once by the same worker, a record cut off mid-write is never taken,
and whatever an agent sends gets the same outcome as from the Python hook."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from compiler.captures import take_spool
from compiler.worker import Worker
from kb_ai.hooks import spool
from kb_ai.hooks.run import POSIX_SH, SHELL_HOOK, process_start, shell_hook_usable
from tests.fakes.kb_responder import respond
from tests.fakes.openai_server import FakeOpenAIServer
from tests.kb_ai.test_hooks import LESSONS, make_kb
from tests.kb_ai.test_hooks_capture import (
    codex_session,
    drain,
    end_event,
    extracts,
    session_sources,
    settings_for,
    tasks_of,
    worker_running,
)
from wiki import KnowledgeBase, open_state

pytestmark = pytest.mark.skipif(not shell_hook_usable(), reason="no POSIX /bin/sh here")
REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
NAME = re.compile(r"^\d{20}-\d+-[0-9a-f]{8}\.json$")  # as spool.append names a record


def shell_hook(stdin: bytes | str, *args: str, cwd: Path, agent: str = "codex"):
    """The command `hooks install` writes for session-end, run as an agent runs it."""
    return subprocess.run(
        [POSIX_SH, str(SHELL_HOOK), "--python", sys.executable, *args, "--agent", agent],
        input=stdin.encode() if isinstance(stdin, str) else stdin,
        capture_output=True,
        env=ENV,
        cwd=cwd,
        timeout=60,
    )


def python_hook(stdin: bytes | str, *args: str, cwd: Path, agent: str = "codex"):
    return subprocess.run(
        [sys.executable, "-P", "-m", "kb_ai.hooks", *args, "--agent", agent],
        input=stdin.encode() if isinstance(stdin, str) else stdin,
        capture_output=True,
        env=ENV,
        cwd=cwd,
        timeout=60,
    )


@pytest.fixture
def server():
    with FakeOpenAIServer(respond) as s:
        yield s


def test_sessions_ended_by_the_shell_hook_are_compiled_exactly_once(tmp_path, server):
    kb = KnowledgeBase.init(tmp_path / "kb")
    project = tmp_path / "project"
    project.mkdir()
    (project / ".kb-ai").write_text(f'# the KB\nkb = "{os.path.relpath(kb.root, project)}"\n')
    (project / "src").mkdir()
    with worker_running(kb):
        for i in range(5):
            rollout = codex_session(tmp_path / f"r{i}.jsonl", f"sess-sh-{i}", 1)
            # found from a subdirectory through the project's marker, as the Python hook does
            hook = shell_hook(
                end_event(kb, rollout, f"sess-sh-{i}"), "session-end", cwd=project / "src"
            )
            assert hook.returncode == 0 and hook.stdout == b"" and hook.stderr == b""
        # the same session ended twice, once by each hook: still one session
        again = end_event(kb, tmp_path / "r0.jsonl", "sess-sh-0")
        assert python_hook(again, "session-end", cwd=project).returncode == 0
    pending = spool.pending(kb.state_dir)
    assert all(NAME.match(p.name) for p in pending), [p.name for p in pending]
    assert len(pending) == 6  # two records of sess-sh-0: the drain takes them as one
    assert list((kb.state_dir / "spool" / "tmp").iterdir()) == []
    settings = settings_for(kb, server)
    drain(kb, settings)
    drain(kb, settings)
    tasks = tasks_of(kb)
    assert len(tasks) == 5 and all(t["state"] == "done" for t in tasks), tasks
    assert len(extracts(server)) == 5
    for i in range(5):
        assert len(session_sources(kb, f"session:codex:sess-sh-{i}#")) == 1
    assert spool.pending(kb.state_dir) == [] and spool.bad_records(kb.state_dir) == []
    with closing(open_state(kb)) as conn:
        rows = conn.execute("SELECT cwd, event FROM captures WHERE state = 'queued'").fetchall()
    assert rows and all(tuple(r) == (str(kb.root), "SessionEnd") for r in rows)


def test_a_codex_stop_from_the_shell_hook_waits_for_the_quiet_period(tmp_path, server):
    kb = KnowledgeBase.init(tmp_path / "kb")
    rollout = codex_session(tmp_path / "r.jsonl", "sess-stop", 2)
    with worker_running(kb):
        shell_hook(end_event(kb, rollout, "sess-stop", "Stop"), "session-end", cwd=kb.root)
    with closing(open_state(kb)) as conn:
        held = take_spool(kb, conn, settings_for(kb, server, session_quiet_seconds=3600))
    assert held.waiting == 1 and held.taken == 0  # the session may go on: not compiled yet


def test_the_shell_hook_starts_a_worker_that_compiles_the_session(tmp_path, server):
    kb = KnowledgeBase.init(tmp_path / "kb")
    with kb.config_path.open("a") as f:
        f.write(
            f'\nmodel = "openai/fake-model"\napi_base = "{server.base_url}"\napi_key = "sk"\n'
            "session_quiet_seconds = 0\n"
        )
    rollout = codex_session(tmp_path / "r.jsonl", "sess-worker", 1)
    hook = shell_hook(end_event(kb, rollout, "sess-worker"), "session-end", cwd=kb.root)
    assert hook.returncode == 0 and hook.stdout == b""
    deadline = time.monotonic() + 120
    log = kb.state_dir / "worker.log"
    while time.monotonic() < deadline and "Compiled" not in (
        log.read_text() if log.exists() else ""
    ):
        time.sleep(0.2)
    assert "Compiled 1 queued task(s)" in log.read_text(), log.read_text()
    [task] = tasks_of(kb)
    assert task["state"] == "done"
    assert not (kb.state_dir / "worker.starting").exists()


def test_a_record_cut_off_mid_write_is_never_claimed(tmp_path, server):
    kb = KnowledgeBase.init(tmp_path / "kb")
    rollout = codex_session(tmp_path / "r.jsonl", "sess-cut", 1)
    event = end_event(kb, rollout, "sess-cut").encode()
    with worker_running(kb):
        hook = subprocess.Popen(
            [POSIX_SH, str(SHELL_HOOK), "--python", sys.executable, "session-end"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=ENV,
            cwd=kb.root,
            start_new_session=True,
        )
        try:
            hook.stdin.write(event[: len(event) // 2])  # the agent is still writing
            hook.stdin.flush()
            tmp = kb.state_dir / "spool" / "tmp"
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not (tmp.is_dir() and any(tmp.iterdir())):
                time.sleep(0.05)  # the record is begun: the hook waits for the rest
            [partial] = list(tmp.glob("*.json"))
            with closing(open_state(kb)) as conn:
                taken = take_spool(kb, conn, settings_for(kb, server))
            assert taken.taken == 0 and taken.failed == 0 and taken.waiting == 0
        finally:
            os.killpg(hook.pid, signal.SIGKILL)  # killed mid-write
            hook.wait()
            hook.stdin.close()
        drain(kb, settings_for(kb, server))
    assert tasks_of(kb) == [] and spool.pending(kb.state_dir) == []
    assert partial.exists() and spool.bad_records(kb.state_dir) == []
    # an hour on, the cut-off record is litter: the next drain deletes it, unread
    os.utime(partial, (time.time() - 7200, time.time() - 7200))
    drain(kb, settings_for(kb, server))
    assert not partial.exists() and tasks_of(kb) == []


BIG_MESSAGE = "a long answer " * 40_000  # 560 KB: under the 1,000,000 bytes a hook reads


def events(tmp_path: Path, kb: KnowledgeBase) -> dict[str, bytes]:
    rollout = codex_session(tmp_path / "r.jsonl", "sess-bad", 1)
    ok = json.loads(end_event(kb, rollout, "sess-bad"))
    return {
        "empty": b"",
        "binary": b'\x00\xff"transcript_path"\x89PNG\r\n\x1a\n' + bytes(range(256)) * 8,
        "not an object": b'["transcript_path", "x"]',
        "no transcript": json.dumps({**ok, "transcript_path": ""}).encode(),
        "json then garbage": json.dumps(ok).encode() + b" trailing",
        "huge": json.dumps({**ok, "pad": "x" * 2_000_000}).encode(),
        "big but whole": json.dumps({**ok, "last_assistant_message": BIG_MESSAGE}).encode(),
        "invalid UTF-8 in a field": json.dumps({**ok, "note": "caf-"})
        .encode()
        .replace(b"caf-", b"caf\xe9"),
    }


@pytest.mark.parametrize(
    "case",
    [
        "empty",
        "binary",
        "not an object",
        "no transcript",
        "json then garbage",
        "huge",
        "big but whole",
        "invalid UTF-8 in a field",
    ],
)
def test_bad_input_gets_the_same_outcome_from_both_hooks(tmp_path, server, case):
    outcomes = []
    for name, run in (("python", python_hook), ("shell", shell_hook)):
        kb = KnowledgeBase.init(tmp_path / name / "kb")
        stdin = events(tmp_path / name, kb)[case]
        with worker_running(kb):
            hook = run(stdin, "session-end", cwd=kb.root)
        assert hook.returncode == 0 and hook.stdout == b"", (name, hook.stderr)
        drain(kb, settings_for(kb, server))
        outcomes.append(
            (
                [t["state"] for t in tasks_of(kb)],
                len(spool.pending(kb.state_dir)),
                len(spool.bad_records(kb.state_dir)),
                sorted(p.name for p in (kb.state_dir / "spool" / "tmp").glob("*")),
            )
        )
    assert outcomes[0] == outcomes[1]
    captured = case in ("big but whole", "invalid UTF-8 in a field")
    assert outcomes[1][0] == (["done"] if captured else [])
    assert outcomes[1][1:] == (0, 0, [])


def test_other_hooks_and_a_missing_kb_go_through_python(tmp_path):
    kb = make_kb(tmp_path / "kb", LESSONS)
    event = json.dumps({"session_id": "s-start", "cwd": str(kb.root), "source": "startup"})
    via_shell = shell_hook(event, "session-start", cwd=kb.root, agent="claude-code")
    via_python = python_hook(event, "session-start", cwd=kb.root, agent="claude-code")
    assert via_shell.returncode == 0 and b"Flaky claim test" in via_shell.stdout
    assert via_shell.stdout == via_python.stdout  # the snapshot, from the same code
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    (nowhere / ".git").mkdir()  # a repository with no KB: the walk stops there
    rollout = codex_session(tmp_path / "r.jsonl", "sess-cwd", 1)
    event = json.loads(end_event(kb, rollout, "sess-cwd"))
    with worker_running(kb):
        # run from a directory with no KB, for a session whose own directory has one
        found = shell_hook(json.dumps(event), "session-end", cwd=nowhere)
        assert found.returncode == 0 and found.stdout == b""
        [record] = spool.pending(kb.state_dir)
        assert spool.read(record)["session_id"] == "sess-cwd"
        record.unlink()
        lost = shell_hook(json.dumps({**event, "cwd": str(nowhere)}), "session-end", cwd=nowhere)
        assert lost.returncode == 0 and lost.stdout == b"" and spool.pending(kb.state_dir) == []
    usage = shell_hook("", "no-such-hook", cwd=kb.root)
    assert usage.returncode == 0 and b"usage" in usage.stderr


def test_a_marker_the_shell_does_not_read_itself_is_read_by_the_python_hook(tmp_path):
    kb = KnowledgeBase.init(tmp_path / "kb")
    project = tmp_path / "project"
    project.mkdir()
    (project / ".kb-ai").write_text(f"kb = '{kb.root}'  # a TOML literal string\n")
    rollout = codex_session(tmp_path / "r.jsonl", "sess-marker", 1)
    with worker_running(kb):
        hook = shell_hook(end_event(kb, rollout, "sess-marker"), "session-end", cwd=project)
    assert hook.returncode == 0 and hook.stdout == b""
    [record] = spool.pending(kb.state_dir)
    assert not record.read_bytes().startswith(spool.SHELL_PREFIX)  # the Python hook's record
    assert spool.read(record)["session_id"] == "sess-marker"


def test_a_shell_record_is_timed_by_when_the_hook_wrote_it(tmp_path, server):
    # the shell hook runs no `date`: the record's time is its file's modification time
    kb = KnowledgeBase.init(tmp_path / "kb")
    rollouts = {s: codex_session(tmp_path / f"{s}.jsonl", s, 2) for s in ("sess-old", "sess-new")}
    with worker_running(kb):
        for session, rollout in rollouts.items():
            hook = shell_hook(end_event(kb, rollout, session, "Stop"), "session-end", cwd=kb.root)
            assert hook.returncode == 0 and hook.stderr == b""
    new = kb.state_dir / "spool" / "new"
    written = {spool.read(p)["session_id"]: p for p in new.iterdir()}  # read before renamed
    two_hours_ago = time.time() - 7200
    os.utime(written["sess-old"], (two_hours_ago, two_hours_ago))  # ended two hours ago
    pending = spool.pending(kb.state_dir)
    assert all(NAME.match(p.name) for p in pending), [p.name for p in pending]
    old = spool.read(pending[0])  # oldest first
    assert old["session_id"] == "sess-old" and abs(old["time"] - two_hours_ago) < 1
    assert abs(spool.read(pending[1])["time"] - time.time()) < 600
    # a Codex Stop waits for an hour of quiet: the old session's is over, the new one's not
    with closing(open_state(kb)) as conn:
        taken = take_spool(kb, conn, settings_for(kb, server, session_quiet_seconds=3600))
    assert taken.taken == 1 and taken.waiting == 1
    [waiting] = spool.pending(kb.state_dir)
    assert spool.read(waiting)["session_id"] == "sess-new"


def test_empty_input_spools_nothing_and_starts_no_worker(tmp_path):
    kb = KnowledgeBase.init(tmp_path / "kb")
    hook = shell_hook(b"", "session-end", cwd=kb.root)
    assert hook.returncode == 0 and hook.stdout == b"" and hook.stderr == b""
    base = kb.state_dir / "spool"
    assert list((base / "new").iterdir()) == [] and list((base / "tmp").iterdir()) == []
    assert not (kb.state_dir / "worker.starting").exists()
    assert not (kb.state_dir / "worker.log").exists()


def test_a_worker_named_in_worker_pid_is_seen_without_its_lock(tmp_path):
    # the hook tells a worker runs from worker.pid alone (shell builtins, no `flock`)
    kb = KnowledgeBase.init(tmp_path / "kb")
    me = os.getpid()
    start = process_start(me)
    if start is None:
        pytest.skip("no /proc here: the hook asks the worker lock")
    (kb.state_dir / "worker.pid").write_text(f"{me} {start}\n")
    rollout = codex_session(tmp_path / "r.jsonl", "sess-named", 1)
    hook = shell_hook(end_event(kb, rollout, "sess-named"), "session-end", cwd=kb.root)
    assert hook.returncode == 0 and hook.stderr == b""
    assert len(spool.pending(kb.state_dir)) == 1
    assert not (kb.state_dir / "worker.starting").exists()  # no worker started
    assert not (kb.state_dir / "worker.log").exists()


def test_a_pid_file_left_by_a_dead_worker_does_not_stop_a_start(tmp_path, server):
    kb = KnowledgeBase.init(tmp_path / "kb")
    with kb.config_path.open("a") as f:
        f.write(
            f'\nmodel = "openai/fake-model"\napi_base = "{server.base_url}"\napi_key = "sk"\n'
            "session_quiet_seconds = 0\n"
        )
    # a worker killed with -9 left its file, and its pid now belongs to another process
    (kb.state_dir / "worker.pid").write_text(f"{os.getpid()} 1\n")
    rollout = codex_session(tmp_path / "r.jsonl", "sess-stale", 1)
    hook = shell_hook(end_event(kb, rollout, "sess-stale"), "session-end", cwd=kb.root)
    assert hook.returncode == 0 and hook.stderr == b""
    log = kb.state_dir / "worker.log"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and "Compiled" not in (
        log.read_text() if log.exists() else ""
    ):
        time.sleep(0.2)
    assert "Compiled 1 queued task(s)" in log.read_text(), log.read_text()
    [task] = tasks_of(kb)
    assert task["state"] == "done"
    # the worker named itself while it ran, and took its name back when it was done
    while time.monotonic() < deadline and (kb.state_dir / "worker.pid").exists():
        time.sleep(0.2)
    assert not (kb.state_dir / "worker.pid").exists()


def test_a_worker_names_itself_while_it_runs(tmp_path, server):
    kb = KnowledgeBase.init(tmp_path / "kb")
    worker = Worker(kb, settings_for(kb, server))
    with worker._alive():
        line = (kb.state_dir / "worker.pid").read_text()
    start = process_start(os.getpid())
    assert line == (f"{os.getpid()} {start}\n" if start else line)
    assert not (kb.state_dir / "worker.pid").exists()


def test_a_record_of_the_hook_before_v3_is_still_read(tmp_path):
    # spooled before an upgrade: the old hook's shape, time in its header
    kb = KnowledgeBase.init(tmp_path / "kb")
    event = end_event(kb, tmp_path / "r.jsonl", "sess-v2")
    data = f'{{"v":2,"agent":"codex","time":1700000000.5,"hook_cwd":"/x","raw":{event}}}\n'
    path = spool.spool_dir(kb.state_dir) / "new" / "00000000000000000001-7-0badcafe.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data)
    record = spool.read(path)
    assert record["session_id"] == "sess-v2" and record["time"] == 1700000000.5


def test_a_session_ended_in_a_directory_with_a_non_utf8_name_is_spooled(tmp_path):
    kb = KnowledgeBase.init(tmp_path / "kb")
    odd = os.path.join(os.fsencode(kb.root), b"caf\xe9")  # a Latin-1 name on a Linux disk
    os.mkdir(odd)
    rollout = codex_session(tmp_path / "r.jsonl", "sess-latin1", 1)
    with worker_running(kb):
        hook = shell_hook(end_event(kb, rollout, "sess-latin1"), "session-end", cwd=odd)
    assert hook.returncode == 0 and hook.stderr == b""
    [record] = spool.pending(kb.state_dir)
    assert spool.read(record)["session_id"] == "sess-latin1"


def test_a_file_named_like_no_record_of_the_hook_is_set_aside(tmp_path):
    kb = KnowledgeBase.init(tmp_path / "kb")
    new = spool.spool_dir(kb.state_dir) / "new"
    new.mkdir(parents=True, exist_ok=True)
    (new / "sh-junk.json").write_text("not a record")
    [listed] = spool.pending(kb.state_dir)
    assert listed.name == "sh-junk.json" and spool.read(listed) is None
    assert [p.name for p in spool.bad_records(kb.state_dir)] == ["sh-junk.json"]
