"""A writer whose own database connection drops (a database restart) has lost its
session-level advisory locks, and another server may take them: a compile sees it
before it records anything, puts its articles back and stops; a worker whose tasks were
taken by another meanwhile leaves them to it and takes its own lock again."""

import asyncio
import json
from contextlib import closing

import pytest

from compiler.queue import TaskQueue
from compiler.run import compile_run
from compiler.worker import Worker
from kb_ai.errors import StorageError
from kb_ai.settings import load_settings
from tests.compiler.conftest import responder_handler
from tests.fakes.fake_llm import FakeLLM
from tests.shared.conftest import _admin
from wiki import all_sources, git, list_articles, open_state
from wiki.database import LOCK_COMPILE, LOCK_OWNER, key_of, shared_database
from wiki.lock import compile_lock

NOTE = "# Release train\n\nReleases leave every Tuesday at 10:00 from the main branch.\n"


def terminate_lock_holder(pg_url, namespace, name):
    """pg_terminate_backend on the session holding that advisory lock: what a database
    restart does to it; returns how many sessions were ended."""
    database = pg_url.rsplit("/", 1)[1]
    with _admin() as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(l.pid) FROM pg_locks l JOIN pg_stat_activity a"
            " ON a.pid = l.pid WHERE l.locktype = 'advisory' AND a.datname = %s"
            " AND l.classid::bigint = %s AND l.objid::bigint = %s",
            (database, namespace, key_of(name) & 0xFFFFFFFF),
        ).fetchall()
    return len(rows)


def terminating_on_write(pg_url, namespace, name, also=None):
    """A model that, at its first write call (articles are being written), ends the
    session of that lock, then answers as usual."""
    done = []

    def handler(stage, messages, schema):
        if stage == "write" and not done:
            done.append(terminate_lock_holder(pg_url, namespace, name))
            if also is not None:
                also()
        return responder_handler(stage, messages, schema)

    return handler, done


def test_a_lost_compile_lock_is_seen_and_another_may_take_it(shared, second, pg_url):
    lock = compile_lock(shared)
    assert lock.acquire()
    lock.check()  # held: nothing to say
    assert terminate_lock_holder(pg_url, LOCK_COMPILE, "compile") == 1
    with pytest.raises(StorageError, match="Lost the compile lock"):
        lock.check()
    other = compile_lock(second)  # what makes it dangerous: the other server takes it
    assert other.acquire(blocking=False)
    other.release()
    lock.release()


def test_a_compile_that_lost_its_lock_puts_its_articles_back(shared, pg_url, tmp_path):
    settings = load_settings(shared.root, {"model": "fake/model"}, environ={})
    note = tmp_path / "release.md"
    note.write_text(NOTE, encoding="utf-8")
    handler, ended = terminating_on_write(pg_url, LOCK_COMPILE, "compile")
    before = git(shared, "rev-parse", "HEAD").strip()

    with pytest.raises(StorageError, match="Lost the compile lock"):
        asyncio.run(compile_run(shared, settings, [note],
                                   llm_factory=lambda s, **k: FakeLLM(handler)))  # fmt: skip

    assert ended == [1]
    assert git(shared, "rev-parse", "HEAD").strip() == before  # no commit
    assert list_articles(shared) == []  # the article it wrote is gone again
    assert not git(shared, "status", "--porcelain", "--", "wiki", "index").strip()
    with closing(open_state(shared)) as conn:
        assert not all_sources(conn)  # nothing recorded: it compiles again in full
    again = asyncio.run(compile_run(shared, settings, [note],
                                       llm_factory=lambda s, **k: FakeLLM(responder_handler)))  # fmt: skip
    assert again.created == ["wiki/concept/release-train.md"]
    assert list_articles(shared) == ["wiki/concept/release-train.md"]


def test_a_worker_whose_tasks_were_taken_leaves_them_and_takes_its_lock_again(shared, pg_url):
    settings = load_settings(shared.root, {"model": "fake/model"}, environ={})
    with closing(open_state(shared)) as conn:
        task, _ = TaskQueue(shared, conn).submit("Release train", NOTE.encode(), filename="r.md")
    taken = []

    def another_worker_claims():  # it sees the owner's lock free: dead, it thinks
        with closing(open_state(shared)) as conn:
            taken.extend(t["id"] for t in TaskQueue(shared, conn).claim("other-worker"))

    owner = "worker-1"
    handler, ended = terminating_on_write(pg_url, LOCK_OWNER, owner, also=another_worker_claims)
    worker = Worker(shared, settings, llm_factory=lambda s, **k: FakeLLM(handler), owner=owner)

    async def one_batch():
        with worker._alive():
            with pytest.raises(StorageError, match="taken by another worker"):
                await worker.run_once()
            # its own lock again: other workers see it alive
            assert shared_database(shared).owner_alive(owner)

    asyncio.run(one_batch())

    assert ended == [1] and taken == [task["id"]]
    with closing(open_state(shared)) as conn:
        now = TaskQueue(shared, conn).get(task["id"])
    assert now["state"] == "running" and now["lease_owner"] == "other-worker"  # its, once
    assert list_articles(shared) == []  # the first worker's run left nothing
    assert len(git(shared, "log", "--format=%s").splitlines()) == 1  # no commit


def test_a_compile_that_lost_its_lock_after_indexing_does_not_commit(
    shared, pg_url, tmp_path, monkeypatch
):
    """The lock lost later, between the index stage (sources recorded, indexes and
    log.md written) and the commit: the run looks again just before committing, puts
    back what it recorded and wrote, and commits nothing; the next run compiles it."""
    import compiler.stages as stages

    settings = load_settings(shared.root, {"model": "fake/model"}, environ={})
    note = tmp_path / "release.md"
    note.write_text(NOTE, encoding="utf-8")
    log_before = (shared.root / "log.md").read_text(encoding="utf-8")
    ended = []
    real_log_run = stages.log_run

    def log_then_lose_the_lock(kb, result, **kwargs):  # the index stage's last step
        real_log_run(kb, result, **kwargs)
        ended.append(terminate_lock_holder(pg_url, LOCK_COMPILE, "compile"))

    monkeypatch.setattr(stages, "log_run", log_then_lose_the_lock)
    before = git(shared, "rev-parse", "HEAD").strip()
    with pytest.raises(StorageError, match="Lost the compile lock"):
        asyncio.run(compile_run(shared, settings, [note],
                                   llm_factory=lambda s, **k: FakeLLM(responder_handler)))  # fmt: skip

    assert ended == [1]
    assert git(shared, "rev-parse", "HEAD").strip() == before  # no commit
    assert list_articles(shared) == []
    assert not git(shared, "status", "--porcelain", "--", "wiki", "index").strip()
    logged = (shared.root / "log.md").read_text(encoding="utf-8")
    assert logged.startswith(log_before)  # the run's entry gone again; the rollback's said
    assert " compile\n" not in logged[len(log_before) :] and " recover\n" in logged
    with closing(open_state(shared)) as conn:
        assert not all_sources(conn)  # nothing recorded: it compiles again in full
    monkeypatch.setattr(stages, "log_run", real_log_run)
    again = asyncio.run(compile_run(shared, settings, [note],
                                       llm_factory=lambda s, **k: FakeLLM(responder_handler)))  # fmt: skip
    assert again.created == ["wiki/concept/release-train.md"] and again.commit
    assert git(shared, "log", "-1", "--format=%s").startswith("compile: 1 source(s)")


def _session(folder, name, *asks):
    """An agent session (a JSON list of messages): the user's ``asks``, one a turn."""
    messages = []
    for ask in asks:
        messages += [
            {"role": "user", "content": ask},
            {"role": "assistant", "content": f"Done: {name} is in place and its tests pass."},
        ]
    path = folder / f"{name}.json"
    path.write_text(json.dumps(messages), encoding="utf-8")
    return path


def test_a_lost_lock_puts_back_the_runs_lessons_and_leaves_a_persons_edit(
    shared, pg_url, tmp_path, monkeypatch
):
    """The lock lost just before the commit of a run that learned from a session: the
    lessons it wrote (one seen again, one new) are as before the run again, while a
    lesson a person edited meanwhile (not committed yet) keeps the person's words."""
    import compiler.stages as stages
    from kb_ai.lessons import read_lessons

    settings = load_settings(shared.root, {"model": "fake/model"}, environ={})
    push, sudo = "Never push to main without running pytest -x first.", "Never use sudo for pip."
    first = _session(tmp_path, "queue-test", "Fix the flaky queue test.", push, sudo)
    asyncio.run(compile_run(shared, settings, [first],
                            llm_factory=lambda s, **k: FakeLLM(responder_handler)))  # fmt: skip
    lessons = {lesson.text: lesson for lesson in read_lessons(shared.root)}
    assert sorted(lessons) == sorted([push, sudo])  # two lessons, committed
    seen, edited = lessons[push].path, lessons[sudo].path
    before = {p: (shared.root / p).read_bytes() for p in (seen, edited)}
    mine = before[edited] + b"\nOnly in CI: locally sudo is fine.\n"

    real_log_run = stages.log_run
    ended, learned, changed = [], [], []

    def a_person_edits_then_the_lock_is_lost(kb, result, **kwargs):
        real_log_run(kb, result, **kwargs)  # the run has learned by now
        learned.extend(lesson.text for lesson in read_lessons(kb.root))
        changed.append((kb.root / seen).read_bytes() != before[seen])
        (shared.root / edited).write_bytes(mine)
        ended.append(terminate_lock_holder(pg_url, LOCK_COMPILE, "compile"))

    monkeypatch.setattr(stages, "log_run", a_person_edits_then_the_lock_is_lost)
    new = "Always run ruff before a commit."
    second = _session(tmp_path, "export", "Add the export command.", push, new)
    head = git(shared, "rev-parse", "HEAD").strip()
    with pytest.raises(StorageError, match="Lost the compile lock"):
        asyncio.run(compile_run(shared, settings, [second],
                                   llm_factory=lambda s, **k: FakeLLM(responder_handler)))  # fmt: skip

    assert ended == [1] and changed == [True] and sorted(learned) == sorted([push, sudo, new])
    assert git(shared, "rev-parse", "HEAD").strip() == head  # no commit
    assert (shared.root / seen).read_bytes() == before[seen]  # seen again: put back
    assert sorted(lesson.text for lesson in read_lessons(shared.root)) == sorted([push, sudo])
    assert (shared.root / edited).read_bytes() == mine  # the person's edit stays
    assert git(shared, "status", "--porcelain", "--", "lessons").strip() == f"M {edited}"
