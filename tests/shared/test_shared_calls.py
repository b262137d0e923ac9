"""With database_url the model call log, the response cache and the compile runs live in
PostgreSQL: a reply one server cached is replayed on another (a refused one never),
Status on either counts both servers' calls and lists both servers' runs, and a model
call does not fail because the database is away when its log is written."""

import asyncio
import logging
import sqlite3
import time
from contextlib import closing
from datetime import UTC, datetime

import psycopg
import pytest
from click.testing import CliRunner

from compiler.runs import RunTracker
from compiler.status import kb_status
from kb_ai.cli import main
from kb_ai.errors import StorageError
from kb_ai.service import open_kb
from tests.fakes.openai_server import FakeOpenAIServer
from tests.web.conftest import Model, make_client
from web.content import public_run, queue_now
from wiki import compile_under_way, open_state
from wiki.database import PgConnection, forget_databases, shared_database

ASK = [{"role": "system", "content": "You pick pages."}, {"role": "user", "content": "Which?"}]
OTHER = [{"role": "system", "content": "You pick pages."}, {"role": "user", "content": "And?"}]


@pytest.fixture
def model():
    with FakeOpenAIServer() as srv:
        yield srv


def _open(kb, model):
    overrides = {
        "model": "openai/fake-model",
        "api_base": model.base_url,
        "api_key": "sk-test",
        "transport": "http",
        "retry_backoff": 0.001,
    }
    return open_kb(kb.root, overrides=overrides, detect=False)


def _call(okb, messages, verdict="accept"):
    """One call through a client of ``okb`` (closed after it): the completion, accepted
    or rejected as a caller does after its checks."""

    async def main():
        async with okb.open_llm() as llm:
            done = await llm.complete(messages, stage="select")
            getattr(done, verdict)()
            return done

    return asyncio.run(main())


def _local_calls(kb):
    """The rows of this server's own state.db call log (none with a shared database)."""
    with closing(sqlite3.connect(kb.state_db)) as conn:
        try:
            return conn.execute("SELECT COUNT(*) FROM llm_calls").fetchone()[0]
        except sqlite3.OperationalError:  # no such table: nothing was logged there
            return 0


def test_a_reply_cached_on_one_server_is_replayed_on_another(shared, second, model):
    here, there = _open(shared, model), _open(second, model)
    first = _call(here, ASK)
    assert not first.cached and len(model.requests) == 1
    again = _call(there, ASK)
    assert again.cached and again.text == first.text
    assert len(model.requests) == 1  # the second server paid nothing for it
    # a reply refused on the second server is not replayed on the first
    _call(there, OTHER, "reject")
    _call(there, OTHER)  # asked again: fetched, accepted, cached
    _call(here, OTHER, "reject")  # replayed here, then refused: out of the cache
    before = len(model.requests)
    fresh = _call(there, OTHER)
    assert not fresh.cached and len(model.requests) == before + 1
    # the log counts every call of both servers, and Status on either says so
    for kb in (shared, second):
        usage = kb_status(kb, _open(kb, model).settings)["usage"]
        assert usage["calls"] == len(model.requests)  # every paid call, either server
        assert usage["cached_calls"] == 2
        assert "unlogged" not in usage
        assert _local_calls(kb) == 0


def test_each_server_lists_the_runs_of_both(shared, second, model):
    mine = RunTracker(shared, "cli: Ann", lambda *a, **k: None)
    mine.start(2)
    theirs = RunTracker(second, "web: Bob", lambda *a, **k: None)
    theirs.start(1)
    theirs.finish("done", {"compiled": ["raw/b.md"], "failed": [], "skipped": []}, "abc123")
    for kb in (shared, second):
        runs = queue_now(kb)["runs"]
        assert [(r["id"], r["started_by"], r["state"]) for r in runs] == [
            (theirs.run_id, "web: Bob", "done"),
            (mine.run_id, "cli: Ann", "running"),
        ]
        last = kb_status(kb, _open(kb, model).settings)["last_run"]
        assert last["commit"] == "abc123" and last["compiled"] == ["raw/b.md"]
        with closing(open_state(kb)) as conn:  # this machine's live compile, either tree
            assert compile_under_way(conn)["id"] == mine.run_id
            assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0
    mine.finish("done", {"compiled": [], "failed": [], "skipped": []}, None)
    with closing(open_state(second)) as conn:
        assert compile_under_way(conn) is None


def test_a_run_of_another_machine_is_shown_as_it_wrote_itself(shared):
    with closing(open_state(shared)) as conn:
        from wiki.state import runs_connection

        runs = runs_connection(conn)
        dead = 2**22 + 12345  # above any pid this machine hands out by default
        beat = datetime.now(UTC).isoformat()  # both still beating (see test_shared_runs.py)
        for host in ("elsewhere", None):
            runs.execute(
                "INSERT INTO runs (started_at, started_by, state, stage, done, total, pid, host,"
                " heartbeat) VALUES ('2026-12-02T05:00:00+00:00', 'worker', 'running', 'write',"
                " 1, 3, ?, ?, ?)",
                (dead, host, beat),
            )
        import socket

        runs.execute("UPDATE runs SET host = ? WHERE host IS NULL", (socket.gethostname(),))
        shown = {r["host"]: public_run(r)["state"] for r in runs.execute("SELECT * FROM runs")}
        # its process is looked for only on its own machine; here it is gone: stopped
        assert shown == {"elsewhere": "running", socket.gethostname(): "stopped"}
        assert compile_under_way(conn) is None  # neither changes this work tree


def _database_away(pg_url):
    """Cut kb-ai's connections and rename the database: it is away until given back."""
    name = pg_url.rsplit("/", 1)[1]
    with psycopg.connect(pg_url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as admin:
        for _ in range(50):
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (name,),
            )
            try:
                admin.execute(f"ALTER DATABASE {name} RENAME TO {name}_away")
                return
            except psycopg.errors.ObjectInUse:  # the pool reconnected meanwhile
                continue
    pytest.fail("could not take the database away")


def _database_back(pg_url):
    name = pg_url.rsplit("/", 1)[1]
    with psycopg.connect(pg_url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as admin:
        admin.execute(f"ALTER DATABASE {name}_away RENAME TO {name}")


def _answering(kb):
    """Wait until this process's pool reaches the database again."""
    for _ in range(100):
        try:
            PgConnection(shared_database(kb)).execute("SELECT 1")
            return
        except StorageError:
            time.sleep(0.2)
    pytest.fail("the database did not answer again")


def test_the_database_away_fails_no_model_call_and_status_says_what_went_unlogged(
    shared, pg_url, model, caplog
):
    okb = _open(shared, model)
    _call(okb, ASK)
    _database_away(pg_url)
    try:
        with caplog.at_level(logging.WARNING, logger="kb_ai.llm.store"):
            done = _call(okb, OTHER)  # the cache unread, the log unwritten: the call made
        assert done.text and not done.cached
        assert "could not write the model call log" in caplog.text
    finally:
        _database_back(pg_url)
    forget_databases()  # a new process: the database answers again
    usage = kb_status(shared, _open(shared, model).settings)["usage"]
    assert usage["calls"] == 1  # the call made while it was away is not in the log ...
    assert usage["unlogged"]["calls"] == 1  # ... and Status says so
    assert "Could not reach the shared database" in usage["unlogged"]["error"]
    assert len(model.requests) == 2
    with make_client(_open(shared, model).settings, Model()) as client:  # the web Status page
        page = client.get("/status").text
    assert "1 model call made here since" in page and "missing from the shared call log" in page
    shown = CliRunner().invoke(main, ["--kb", str(shared.root), "status"])
    assert shown.exit_code == 0, shown.output
    assert "not logged 1 model call(s) since" in shown.output


def test_a_reply_refused_while_the_database_is_away_is_not_replayed_after(
    shared, second, pg_url, model, monkeypatch, caplog
):
    monkeypatch.setattr("kb_ai.llm.store.AWAY_PAUSE_S", 0.0)  # ask again at once once back
    here = _open(shared, model)
    _call(here, ASK)  # cached

    async def refuse_while_away():
        async with here.open_llm() as llm:
            hit = await llm.complete(ASK, stage="select")
            assert hit.cached
            _database_away(pg_url)
            try:
                with caplog.at_level(logging.WARNING, logger="kb_ai.llm.store"):
                    hit.reject()  # its removal cannot be written now
                    for _ in range(200):
                        if "could not write the model call log" in caplog.text:
                            break
                        await asyncio.sleep(0.1)
                    else:
                        pytest.fail("the removal was not tried while the database was away")
            finally:
                _database_back(pg_url)
            _answering(shared)
            again = await llm.complete(ASK, stage="select")
            assert not again.cached  # still in the shared cache, yet not replayed here
            (await llm.complete(OTHER, stage="select")).accept()

    asyncio.run(refuse_while_away())
    before = len(model.requests)
    elsewhere = _call(_open(second, model), ASK)
    assert not elsewhere.cached  # the removal was written once it was back: no server replays it
    assert len(model.requests) == before + 1


def test_shared_runs_are_numbered_after_the_runs_a_server_had_alone(kb, pg_url, monkeypatch):
    for _ in range(3):  # before it shared a database (review/1..3 may be held)
        tracker = RunTracker(kb, "cli: Ann", lambda *a, **k: None)
        tracker.start(1)
        tracker.finish("done", {"compiled": [], "failed": [], "skipped": []}, None)
    assert tracker.run_id == 3
    monkeypatch.setenv("KB_AI_DATABASE_URL", pg_url)
    shared_run = RunTracker(kb, "cli: Ann", lambda *a, **k: None)
    shared_run.start(1)
    assert shared_run.run_id == 4
    assert [r["id"] for r in queue_now(kb)["runs"]] == [4]  # the shared list: its own runs
