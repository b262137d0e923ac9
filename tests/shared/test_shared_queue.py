"""With database_url the task queue lives in PostgreSQL: any server sharing the database
sees and claims every task, concurrent claims never take one task twice, a killed
worker's task is taken over and done once, and a NOTIFY wakes the workers."""

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import closing
from pathlib import Path

import pytest

from compiler.queue import TaskQueue
from compiler.worker import Worker
from kb_ai.errors import ConfigError, StorageError
from kb_ai.settings import load_settings
from tests.compiler.conftest import responder_handler
from tests.fakes.fake_llm import FakeLLM
from wiki import KnowledgeBase, git, list_articles, open_state
from wiki.database import forget_databases, shared_database

ROOT = Path(__file__).resolve().parents[2]
NOTE = b"# Release train\n\nReleases leave every Tuesday at 10:00 from the main branch.\n"


def queue_of(kb):
    conn = open_state(kb)
    return TaskQueue(kb, conn), conn


def test_a_task_submitted_to_one_server_is_claimed_and_read_by_another(shared, second):
    q1, c1 = queue_of(shared)
    q2, c2 = queue_of(second)
    with closing(c1), closing(c2):
        task, created = q1.submit("Release train", NOTE, filename="release.md")
        assert created
        assert not q1.spool_path(task["id"]).exists()  # the copy is in the database
        [claimed] = q2.claim("server-2")
        assert claimed["id"] == task["id"]
        assert q2.read_content(task["id"]) == NOTE
        # each server's own state.db holds no tasks: the shared database does
        assert c2.execute("SELECT 1 FROM sqlite_master WHERE name = 'tasks'").fetchone() is None
        q2.finish(task["id"], result={"commit": "abc"})
        assert q1.get(task["id"])["state"] == "done"
        assert q1.submit("Again", NOTE) == (q1.get(task["id"]), False)  # a duplicate


def test_concurrent_claims_never_take_one_task_twice(shared, second):
    q, conn = queue_of(shared)
    with closing(conn):
        ids = {
            q.submit(f"Note {i}", f"# Note {i}\n\nBody {i}.\n".encode())[0]["id"] for i in range(24)
        }
    taken: list[list[str]] = []
    errors: list[BaseException] = []

    def claimer(kb, name):
        try:
            mine = []
            qq, cc = queue_of(kb)
            with closing(cc):
                while got := qq.claim(name, limit=2):
                    mine += [t["id"] for t in got]
            taken.append(mine)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [
        threading.Thread(target=claimer, args=(kb, f"w{i}"))
        for i, kb in enumerate([shared, second, shared, second])
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    every = [i for mine in taken for i in mine]
    assert sorted(every) == sorted(ids)  # each task claimed exactly once


HOLDER = """
import sys, time
from contextlib import closing
from compiler.queue import TaskQueue, hold_owner
from wiki import KnowledgeBase, open_state
kb = KnowledgeBase.open(sys.argv[1])
held = hold_owner(kb, "server-1")  # for as long as this process lives
with closing(open_state(kb)) as conn:
    TaskQueue(kb, conn).claim("server-1", lease_seconds=600)
print("claimed", flush=True)
time.sleep(600)
"""


def test_a_worker_killed_mid_task_is_taken_over_and_done_once(shared, second, pg_url):
    """Another machine's worker dies (kill -9) holding a ten-minute lease: its advisory
    lock goes with its session, so a worker here takes the task at once and compiles it."""
    q, conn = queue_of(shared)
    with closing(conn):
        task, _ = q.submit("Release train", NOTE)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KB_AI_DATABASE_URL": pg_url}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(second.root)], env=env,
                              stdout=subprocess.PIPE)  # fmt: skip
    try:
        assert holder.stdout.readline() == b"claimed\n"
        q, conn = queue_of(shared)
        with closing(conn):
            assert q.get(task["id"])["lease_owner"] == "server-1"
            assert q.claim("server-2") == []  # alive: its lease stands
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        holder.stdout.close()
    settings = load_settings(shared.root, {"model": "fake/model"}, environ={})
    worker = Worker(shared, settings, llm_factory=lambda s, **k: FakeLLM(responder_handler))
    assert asyncio.run(worker.run_once()) == 1
    assert asyncio.run(worker.run_once()) == 0  # nothing left: done once
    q, conn = queue_of(shared)
    with closing(conn):
        done = q.get(task["id"])
    assert done["state"] == "done" and done["attempts"] == 2
    assert list_articles(shared) == ["wiki/concept/release-train.md"]
    assert len(git(shared, "log", "--format=%s").splitlines()) == 2  # init + one compile


def test_a_worker_whose_lease_was_taken_over_on_another_server_cannot_finish_it(
    shared, second, caplog
):
    q1, c1 = queue_of(shared)
    q2, c2 = queue_of(second)
    with closing(c1), closing(c2):
        task, _ = q1.submit("Release train", NOTE)
        q1.claim("server-1", lease_seconds=0.05)
        time.sleep(0.1)
        assert [t["id"] for t in q2.claim("server-2")] == [task["id"]]
        with caplog.at_level("WARNING", logger="compiler.queue"):
            assert not q1.finish(task["id"], error="model timed out", owner="server-1")
        assert "taken over by another worker" in caplog.text
        now = q2.get(task["id"])
        assert (now["state"], now["lease_owner"], now["error"]) == ("running", "server-2", None)
        assert q2.read_content(task["id"])  # its copy kept for the worker compiling it
        assert q2.finish(task["id"], result={"commit": "abc"}, owner="server-2")
        assert q1.get(task["id"])["state"] == "done"


def test_a_submission_wakes_a_listening_worker(shared, second):
    db = shared_database(second)
    woken = threading.Event()
    listener = db.listen(woken.set)
    try:
        assert woken.wait(10)  # connected (it wakes once then: look, in case)
        woken.clear()
        q, conn = queue_of(shared)
        with closing(conn):
            q.submit("Release train", NOTE)
        assert woken.wait(10)
    finally:
        listener.stop()


def test_a_database_migrated_by_a_newer_kb_ai_is_refused(shared):
    q, conn = queue_of(shared)
    conn.close()
    db = shared_database(shared)
    with db.connection() as c:
        c.execute("UPDATE kb_ai_schema SET version = 999 WHERE component = 'queue'")
    forget_databases()  # another process, opening it anew
    with closing(open_state(shared)) as conn, pytest.raises(ConfigError, match="newer kb-ai"):
        TaskQueue(shared, conn)


def test_a_database_of_another_knowledge_base_is_refused(shared, tmp_path, monkeypatch):
    queue_of(shared)[1].close()
    for name in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):  # made another day
        monkeypatch.setenv(name, "2025-01-01T09:00:00+00:00")
    other = KnowledgeBase.init(tmp_path / "other")
    forget_databases()
    with pytest.raises(ConfigError, match="belongs to another knowledge base"):
        shared_database(other)


def test_the_database_gone_fails_with_a_clear_error_and_recovers(shared, pg_url):
    q, conn = queue_of(shared)
    with closing(conn):
        first, _ = q.submit("Release train", NOTE)
    name = pg_url.rsplit("/", 1)[1]
    import psycopg

    with psycopg.connect(pg_url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as admin:
        for _ in range(50):  # every connection of kb-ai cut, then the database away
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (name,),
            )
            try:
                admin.execute(f"ALTER DATABASE {name} RENAME TO {name}_away")
                break
            except psycopg.errors.ObjectInUse:  # the pool reconnected meanwhile
                continue
    q, conn = queue_of(shared)
    with closing(conn):
        with pytest.raises(StorageError, match="Could not reach the shared database") as err:
            q.submit("On call", b"# On call\n\nThe rota changes on Mondays.\n")
        assert "PostgreSQL" in (err.value.hint or "")
        with psycopg.connect(pg_url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as admin:
            admin.execute(f"ALTER DATABASE {name}_away RENAME TO {name}")
        again, created = q.submit("On call", b"# On call\n\nThe rota changes on Mondays.\n")
        assert created
        assert {t["id"] for t in q.list()} == {first["id"], again["id"]}  # nothing lost
