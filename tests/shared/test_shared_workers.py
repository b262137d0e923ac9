"""`kb-ai worker` processes sharing one database: every submission compiled once, one
compile writing at a time; a worker killed with kill -9 mid-run loses nothing."""

import os
import signal
import subprocess
import sys
import time
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import pytest

from compiler.queue import TaskQueue
from tests.conftest import serve_model
from wiki import git, list_articles, open_state

ROOT = Path(__file__).resolve().parents[2]
TOPICS = ["release train", "on call rota", "backup policy", "incident review", "code freeze"]


def _start_worker(kb, pg_url):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KB_AI_DATABASE_URL": pg_url}
    return subprocess.Popen(
        [sys.executable, "-m", "kb_ai", "--kb", str(kb.root), "worker"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _stop(proc):
    """Stop a worker as Ctrl-C does; killed if it has not stopped within 30 s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
    proc.stderr.close()


def _states(kb):
    with closing(open_state(kb)) as conn:
        return [t["state"] for t in TaskQueue(kb, conn).list()]


def _taken_over(kb, pg_url, task_id):
    """The task as it is once a new worker, started now, has finished it (stopped then)."""
    worker = _start_worker(kb, pg_url)
    try:
        assert _wait_until(lambda: _states(kb) == ["done"]), _states(kb)
    finally:
        _stop(worker)
    with closing(open_state(kb)) as conn:
        return TaskQueue(kb, conn).get(task_id)


def _wait_until(check, seconds=90.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.2)
    return False


def test_two_workers_compile_every_submission_once(shared, pg_url, fake_model):
    with closing(open_state(shared)) as conn:
        queue = TaskQueue(shared, conn)
        for topic in TOPICS:
            body = f"# {topic.title()}\n\nThe {topic} is owned by the platform team.\n"
            queue.submit(topic.title(), body.encode())
    workers = [_start_worker(shared, pg_url) for _ in range(2)]
    try:
        assert _wait_until(lambda: _states(shared) == ["done"] * len(TOPICS)), _states(shared)
        assert all(w.poll() is None for w in workers)  # both still serving
    finally:
        for w in workers:
            _stop(w)
    with closing(open_state(shared)) as conn:
        tasks = TaskQueue(shared, conn).list()
    assert all(t["attempts"] == 1 for t in tasks)  # none compiled twice
    assert len(list_articles(shared)) >= len(TOPICS)
    commits = git(shared, "log", "--format=%s").splitlines()
    assert len(commits) - 1 <= len(TOPICS)  # one commit per run, runs never interleaved
    assert git(shared, "status", "--porcelain").strip() == ""  # nothing half-written


@pytest.fixture
def slow_model(monkeypatch):
    """The stand-in model, two seconds a reply: a compile is under way long enough to be
    killed in the middle of it."""
    from tests.fakes.kb_responder import respond

    yield from serve_model(monkeypatch, lambda request: replace(respond(request), delay=2.0))


def test_a_worker_killed_mid_compile_leaves_its_task_to_the_other(shared, pg_url, slow_model):
    with closing(open_state(shared)) as conn:
        task, _ = TaskQueue(shared, conn).submit(
            "Release train", b"# Release train\n\nReleases leave every Tuesday at 10:00.\n"
        )
    first = _start_worker(shared, pg_url)
    try:
        assert _wait_until(lambda: _states(shared) == ["running"] and slow_model.requests, 60)
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    finally:
        if first.poll() is None:
            first.kill()
        _stop(first)
    done = _taken_over(shared, pg_url, task["id"])
    assert done["attempts"] == 2 and done["state"] == "done"
    assert "wiki/concept/release-train.md" in list_articles(shared)
    assert git(shared, "status", "--porcelain").strip() == ""


def test_a_worker_killed_after_extracting_while_it_waits_for_the_lock_loses_nothing(
    shared, second, pg_url, fake_model
):
    """Another server writes (it holds the database's lock): a worker here extracts its
    task, waits for the lock, and is killed; nothing of it is in the wiki, and the next
    worker compiles the task once the lock is free."""
    from tests.fakes.kb_responder import stage_of
    from wiki.lock import compile_lock

    with closing(open_state(shared)) as conn:
        task, _ = TaskQueue(shared, conn).submit(
            "Release train", b"# Release train\n\nReleases leave every Tuesday at 10:00.\n"
        )
    other_server = compile_lock(second)  # the advisory lock, from the other work tree
    assert other_server.acquire(blocking=False)
    try:
        first = _start_worker(shared, pg_url)
        try:
            assert _wait_until(lambda: [stage_of(r) for r in fake_model.requests] == ["extract"])
            time.sleep(0.5)  # it would write now, if it did not wait for the lock
            assert [stage_of(r) for r in fake_model.requests] == ["extract"]
            assert _states(shared) == ["running"]
            first.send_signal(signal.SIGKILL)
            first.wait(10)
        finally:
            _stop(first)
        assert list_articles(shared) == [] and not list((shared.root / "raw").glob("*.md"))
        assert git(shared, "status", "--porcelain").strip() == ""
    finally:
        other_server.release()
    done = _taken_over(shared, pg_url, task["id"])
    assert done["attempts"] == 2
    assert "wiki/concept/release-train.md" in list_articles(shared)
    assert len(git(shared, "log", "--format=%s").splitlines()) == 2
    assert git(shared, "status", "--porcelain").strip() == ""


def test_a_worker_outlives_the_database_going_away_mid_compile(shared, pg_url, slow_model):
    """`kb-ai worker` on its own (as compose.scaled.yaml runs it), its database behind a
    proxy the test stops in the middle of a compile: the worker used to exit with an
    error; it waits, says so in one line each way, compiles the note once the database
    is back and what was queued meanwhile, and stops cleanly on SIGTERM."""
    from tests.shared.proxy import TcpProxy

    proxy = TcpProxy(("127.0.0.1", 5432))
    proxy.start()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env["KB_AI_DATABASE_URL"] = proxy.url(pg_url.rsplit("/", 1)[1])
    said = shared.root.parent / "worker.err"
    with said.open("wb") as err:  # (a file: a pipe nobody reads could fill and block it)
        worker = subprocess.Popen([sys.executable, "-m", "kb_ai", "--kb", str(shared.root),
                                   "worker"], env=env, stdout=subprocess.DEVNULL, stderr=err)  # fmt: skip
    try:
        with closing(open_state(shared)) as conn:
            TaskQueue(shared, conn).submit(
                "Release train", b"# Release train\n\nReleases leave every Tuesday.\n"
            )
        assert _wait_until(lambda: _states(shared) == ["running"] and slow_model.requests, 60)
        proxy.stop()  # the database away for the worker (not for the test), mid-compile
        with closing(open_state(shared)) as conn:
            TaskQueue(shared, conn).submit(
                "On call", b"# On call\n\nThe on-call rota changes every Monday.\n"
            )
        time.sleep(8)  # the compile's calls end, its recording and the retries fail
        assert worker.poll() is None, said.read_text()  # still there
        proxy.start()
        assert _wait_until(lambda: _states(shared) == ["done", "done"], 120), _states(shared)
        assert worker.poll() is None
    finally:
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)  # as a container is stopped
        try:
            worker.wait(30)
        finally:
            if worker.poll() is None:
                worker.kill()
            proxy.stop()
    assert worker.returncode == 0, said.read_text()
    lines = said.read_text().splitlines()
    assert sum("does not answer" in line for line in lines) == 1, lines
    assert sum("answers again" in line for line in lines) == 1, lines
    subjects = git(shared, "log", "--format=%s").splitlines()
    compiled = [int(s.split()[1]) for s in subjects if s.startswith("compile:")]
    assert sum(compiled) == 2, subjects  # each note compiled once (a run may take both)
    assert {"wiki/concept/release-train.md", "wiki/concept/on-call.md"} <= set(
        list_articles(shared)
    )
    assert git(shared, "status", "--porcelain").strip() == ""
