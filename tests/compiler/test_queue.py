"""The compile queue and its worker: nothing submitted is lost, a dead worker's task is
compiled by the next one, duplicates are recognised, failures keep their reason."""

import asyncio
import os
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from compiler.queue import TaskQueue
from compiler.worker import Worker
from kb_ai.errors import LLMTimeoutError, NotFoundError, UsageError
from tests.compiler.conftest import responder_handler
from tests.fakes.fake_llm import FakeLLM
from wiki import git, list_articles, open_state


@pytest.fixture
def queue(kb):
    conn = open_state(kb)
    yield TaskQueue(kb, conn)
    conn.close()


NOTE = b"# Release train\n\nReleases leave every Tuesday at 10:00 from the main branch.\n"


def test_submission_is_on_disk_and_in_the_table_before_submit_returns(queue):
    task, created = queue.submit("Release train", NOTE, filename="release.md")
    assert created and task["state"] == "queued"
    assert queue.spool_path(task["id"]).read_bytes() == NOTE
    again, created = queue.submit("Another title", NOTE)
    assert not created and again["id"] == task["id"]  # same content: a duplicate
    with pytest.raises(UsageError, match="empty"):
        queue.submit("x", b"  \n")


def test_a_lease_that_expires_is_claimed_again(queue):
    task, _ = queue.submit("Release train", NOTE)
    first = queue.claim("worker-a", lease_seconds=0.05)
    assert [t["id"] for t in first] == [task["id"]]
    assert queue.claim("worker-b") == []  # still leased
    time.sleep(0.1)
    second = queue.claim("worker-b")
    assert [t["id"] for t in second] == [task["id"]] and second[0]["attempts"] == 2


def test_a_worker_whose_lease_was_taken_over_cannot_finish_the_task(queue, caplog):
    """The first worker's lease ran out and another took the task: the first one's late
    outcome (done or failed) is not recorded over the second's compile, the copy stays
    for it, and the log says the task was taken over."""
    task, _ = queue.submit("Release train", NOTE)
    queue.claim("worker-a", lease_seconds=0.05)
    time.sleep(0.1)
    assert [t["id"] for t in queue.claim("worker-b")] == [task["id"]]
    with caplog.at_level("WARNING", logger="compiler.queue"):
        assert not queue.finish(task["id"], error="model timed out", owner="worker-a")
        assert not queue.finish(task["id"], result={"commit": "abc"}, owner="worker-a")
    assert "taken over by another worker" in caplog.text
    now = queue.get(task["id"])
    assert now["state"] == "running" and now["lease_owner"] == "worker-b"
    assert now["error"] is None and queue.read_content(task["id"]) == NOTE
    assert queue.finish(task["id"], result={"commit": "def"}, owner="worker-b")
    done = queue.get(task["id"])
    assert done["state"] == "done" and done["result"] == {"commit": "def"}


HOLDER = """
import sys, time
from contextlib import closing
from compiler.queue import TaskQueue, hold_owner
from wiki import KnowledgeBase, open_state
kb = KnowledgeBase.open(sys.argv[1])
hold_owner(kb, "server-1")
with closing(open_state(kb)) as conn:
    TaskQueue(kb, conn).claim("server-1", lease_seconds=600)
print("claimed", flush=True)
time.sleep(600)
"""


def test_a_dead_servers_tasks_are_taken_at_once_a_live_ones_are_not(kb, queue):
    """A server that crashed (kill -9) leaves a lease of ten minutes: the next worker takes
    its task at once. While the server lives, its lease is respected."""
    task, _ = queue.submit("Release train", NOTE)
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(kb.root)], env=env,
                              stdout=subprocess.PIPE)  # fmt: skip
    try:
        assert holder.stdout.readline() == b"claimed\n"
        assert queue.get(task["id"])["state"] == "running"
        assert queue.claim("server-2", lease_seconds=600) == []  # alive: its lease stands
    finally:
        holder.kill()
        holder.wait(10)
        holder.stdout.close()
    [taken] = queue.claim("server-2", lease_seconds=600)
    assert taken["id"] == task["id"] and taken["attempts"] == 2
    assert taken["lease_owner"] == "server-2"


def test_retry_and_delete(queue):
    task, _ = queue.submit("Release train", NOTE)
    queue.claim("w")
    with pytest.raises(UsageError, match="being compiled"):
        queue.delete(task["id"])
    queue.finish(task["id"], error="model timed out")
    assert queue.get(task["id"])["error"] == "model timed out"
    assert queue.retry(task["id"])["state"] == "queued"
    queue.delete(task["id"])
    with pytest.raises(NotFoundError):
        queue.get(task["id"])
    assert not queue.spool_path(task["id"]).exists()


def test_the_worker_compiles_a_batch_in_one_commit(kb, settings, queue):
    queue.submit("Release train", NOTE)
    queue.submit("On call", b"# On call\n\nThe on-call rota changes every Monday at 09:00.\n")
    worker = Worker(kb, settings, llm_factory=lambda s, **k: FakeLLM(responder_handler))
    assert asyncio.run(worker.run_once()) == 2
    tasks = queue.list()
    assert {t["state"] for t in tasks} == {"done"}
    assert sorted(list_articles(kb)) == ["wiki/concept/on-call.md", "wiki/concept/release-train.md"]
    assert len(git(kb, "log", "--format=%s").splitlines()) == 2


def test_a_model_that_is_down_fails_tasks_with_the_reason_and_loses_none(kb, settings, queue):
    task, _ = queue.submit("Release train", NOTE)
    down = FakeLLM(lambda *a: LLMTimeoutError("fake/model did not answer within 180 s"))
    asyncio.run(Worker(kb, settings, llm_factory=lambda s, **k: down).run_once())
    failed = queue.get(task["id"])
    assert failed["state"] == "failed" and "did not answer" in failed["error"]
    queue.retry(task["id"])
    asyncio.run(
        Worker(kb, settings, llm_factory=lambda s, **k: FakeLLM(responder_handler)).run_once()
    )
    assert queue.get(task["id"])["state"] == "done"


def test_a_task_leased_by_a_dead_worker_is_compiled_by_the_next(kb, settings):
    with closing(open_state(kb)) as conn:
        q = TaskQueue(kb, conn)
        task, _ = q.submit("Release train", NOTE)
        q.claim("dead-server", lease_seconds=0.05)  # it claimed, then died
    time.sleep(0.1)
    worker = Worker(kb, settings, llm_factory=lambda s, **k: FakeLLM(responder_handler))
    assert asyncio.run(worker.run_once()) == 1
    with closing(open_state(kb)) as conn:
        assert TaskQueue(kb, conn).get(task["id"])["state"] == "done"
    assert list_articles(kb) == ["wiki/concept/release-train.md"]


def test_binary_or_invalid_text_fails_the_task_with_a_reason(kb, settings, queue):
    task, _ = queue.submit("Latin", "caf\xe9".encode("latin-1") + b" notes")
    asyncio.run(
        Worker(kb, settings, llm_factory=lambda s, **k: FakeLLM(responder_handler)).run_once()
    )
    assert "UTF-8" in queue.get(task["id"])["error"]
