"""A compile run that died on another machine (its process killed with kill -9, or the
machine gone) stops writing its heartbeat: Status, `kb-ai status` and the run list
show it as died instead of running for ever; a live run keeps beating and stays
running."""

import os
import signal
import subprocess
import sys
import time
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner

import wiki.state
from kb_ai.cli import main
from kb_ai.settings import load_settings
from tests.web.conftest import Model, make_client
from web.content import queue_now
from wiki import open_state
from wiki.state import runs_connection

ROOT = Path(__file__).resolve().parents[2]
# Another machine's compile: its process names another host, and beats every 0.2 s.
ELSEWHERE = """
import sys, time
import wiki.state
wiki.state._host = lambda: "machine-b"
from compiler.runs import RunTracker
from wiki import KnowledgeBase
tracker = RunTracker(KnowledgeBase.open(sys.argv[1]), "worker", lambda *a, **k: None,
                     beat_seconds=0.2)
tracker.start(3)
tracker("stage", name="write", total=3)
print(tracker.run_id, flush=True)
time.sleep(600)
"""


def _runs(kb):
    return {r["id"]: r for r in queue_now(kb)["runs"]}


def _wait_until(check, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"not so after {timeout} s")


def test_a_run_killed_on_another_machine_shows_as_died(shared, pg_url, monkeypatch):
    monkeypatch.setattr(wiki.state, "RUN_STALE_SECONDS", 2.0)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KB_AI_DATABASE_URL": pg_url}
    other = subprocess.Popen([sys.executable, "-c", ELSEWHERE, str(shared.root)], env=env,
                             stdout=subprocess.PIPE)  # fmt: skip
    try:
        run_id = int(other.stdout.readline())
        time.sleep(3.0)  # past the stale limit: alive, it kept beating
        run = _runs(shared)[run_id]
        assert (run["state"], run["stage"], run["host"]) == ("running", "write", "machine-b")
    finally:
        other.send_signal(signal.SIGKILL)
        other.wait(10)
        other.stdout.close()
    _wait_until(lambda: _runs(shared)[run_id]["state"] == "died", 10)
    run = _runs(shared)[run_id]
    assert run["stage"] is None and "no sign of life since" in run["note"]
    assert "on machine-b" in run["note"]


def test_a_run_of_a_machine_that_is_gone_is_died_on_status_and_in_kb_ai_status(shared, pg_url):
    long_ago = (datetime.now(UTC) - timedelta(minutes=10)).isoformat(timespec="seconds")
    now = datetime.now(UTC).isoformat(timespec="seconds")
    with closing(open_state(shared)) as conn:
        runs = runs_connection(conn)
        ids = []
        for host, beat in (("gone-machine", long_ago), ("busy-machine", now)):
            ids.append(
                runs.execute(
                    "INSERT INTO runs (started_at, started_by, state, stage, done, total, pid,"
                    " host, heartbeat) VALUES (?, 'web', 'running', 'write', 1, 3, 4242, ?, ?)"
                    " RETURNING id",
                    (long_ago, host, beat),
                ).fetchone()[0]
            )
    gone, busy = ids
    runs = _runs(shared)
    assert runs[gone]["state"] == "died" and runs[busy]["state"] == "running"

    settings = load_settings(shared.root, {"model": "fake/model"}, environ={})
    with make_client(settings, Model(), start_worker=False) as client:
        page = client.get("/status").text
        assert '<span class="pill died">died</span>' in page
        assert f"no sign of life since {long_ago} on gone-machine" in page
        listed = {r["id"]: r["state"] for r in client.get("/api/tasks").json()["runs"]}
        assert listed == {gone: "died", busy: "running"}

    result = CliRunner().invoke(
        main, ["--kb", str(shared.root), "status"], env={"KB_AI_DATABASE_URL": pg_url}
    )
    assert result.exit_code == 0, result.output
    assert f"died      run {gone} (web, on gone-machine, started {long_ago})" in result.output
    assert f"no sign of life since {long_ago}" in result.output
    assert f"running   run {busy} (web, on busy-machine, started {long_ago}): write 1/3" in (
        result.output
    )
