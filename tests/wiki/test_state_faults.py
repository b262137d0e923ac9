"""state.db's storage faults cross out of wiki/state.py as StorageError (what failed,
where, what to do), and a state.db that vanished is made again from what the knowledge
base holds, saying so."""

import json
import sqlite3
from contextlib import closing

import pytest

from kb_ai.errors import KbAiError, StorageError
from tests.fakes.storage_faults import corrupt, read_only
from wiki import all_sources, get_source, open_state, upsert_source
from wiki.articles import Article, write_article
from wiki.extraction import ExtractionRecord, write_extraction
from wiki.raw import RawSource, write_raw
from wiki.state import state_loss


def test_a_corrupted_state_db_is_a_storage_error_that_says_what_to_do(kb):
    open_state(kb).close()
    corrupt(kb.state_db)
    with pytest.raises(StorageError) as caught:
        open_state(kb)
    error = caught.value
    assert isinstance(error, KbAiError)
    assert error.cause == "corrupt" and not error.transient
    assert str(kb.state_db) in str(error)
    assert "move" in error.hint and "aside" in error.hint


def test_a_state_folder_that_cannot_be_written_is_a_storage_error(kb):
    with closing(open_state(kb)) as conn:
        upsert_source(conn, "/n/a.md", raw_path="raw/a.md", checksum="c", status="ok")
    with (
        read_only(kb.state_dir),
        pytest.raises(StorageError) as caught,
        closing(open_state(kb)) as conn,
    ):
        upsert_source(conn, "/n/b.md", raw_path="raw/b.md", checksum="c", status="ok")
    assert caught.value.cause in ("readonly", "cantopen")
    assert "writable" in caught.value.hint
    with closing(open_state(kb)) as conn:  # nothing half-written, the old row intact
        assert sorted(all_sources(conn)) == ["/n/a.md"]


def test_a_fault_of_the_statement_stays_a_sqlite_error(kb):
    with closing(open_state(kb)) as conn, pytest.raises(sqlite3.OperationalError):
        conn.execute("SELECT * FROM no_such_table")


def _source(kb, slug, text, *, cited=True, extracted=True):
    raw = RawSource(
        slug=slug,
        title=slug.title(),
        origin=f"/notes/{slug}.md",
        kind="note",
        checksum=f"sum-{slug}",
        ingested_at="2026-01-02T03:04:05+00:00",
        text=text,
    )
    write_raw(kb, raw)
    if extracted:
        write_extraction(
            kb,
            slug,
            ExtractionRecord(
                source=raw.path,
                source_checksum=raw.checksum,
                model="m1",
                prompt_version="v7",
                extracted_at=raw.ingested_at,
            ),
        )
    if cited:
        write_article(
            kb,
            Article(
                path=f"wiki/concept/{slug}.md",
                title=slug.title(),
                type="concept",
                summary="s",
                tags=[],
                sources=[raw.path],
                created="2026-01-02",
                updated="2026-01-02",
                body=f"# {slug.title()}\n\n{text}\n",
            ),
        )


def test_a_deleted_state_db_is_rebuilt_from_the_knowledge_base_and_the_loss_noted(kb):
    _source(kb, "backups", "Backups run nightly.")
    _source(kb, "draft", "Never compiled.", cited=False, extracted=False)
    with closing(open_state(kb)) as conn:
        conn.execute("CREATE TABLE chat (x)")  # something only state.db knew
        conn.commit()
    kb.state_db.unlink()

    with closing(open_state(kb)) as conn:
        row = get_source(conn, "/notes/backups.md")
        draft = get_source(conn, "/notes/draft.md")
        loss = state_loss(conn)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    # compiled, with what it was compiled from: the next compile skips it
    assert (row["status"], row["checksum"], row["model"], row["prompt_version"]) == (
        "ok",
        "sum-backups",
        "m1",
        "v7",
    )
    assert json.loads(row["articles"]) == ["wiki/concept/backups.md"]
    assert draft["status"] == "failed" and "compile it again" in draft["error"]
    assert loss["rebuilt"] == {"sources": 2}
    assert "chat sessions" in loss["lost"]
    assert "chat" not in tables


def test_a_new_knowledge_base_has_nothing_to_report(kb):
    with closing(open_state(kb)) as conn:
        assert state_loss(conn) is None


def test_the_wal_of_a_deleted_state_db_is_not_replayed_into_the_new_one(kb):
    """A server keeps a connection open; state.db is deleted under it. The new file must
    not take the old one's WAL (SQLite would read its pages as the new file's)."""
    _source(kb, "backups", "Backups run nightly.")
    held = open_state(kb)  # keeps state.db-wal and -shm alive
    held.execute("CREATE TABLE IF NOT EXISTS only_old (x)")
    held.execute("INSERT INTO only_old VALUES (1)")
    held.commit()
    kb.state_db.unlink()
    try:
        with closing(open_state(kb)) as conn:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            assert get_source(conn, "/notes/backups.md")["status"] == "ok"
        assert "only_old" not in tables
    finally:
        held.close()


def test_a_missing_state_db_in_a_folder_nobody_may_write_is_a_storage_error(kb):
    _source(kb, "backups", "Backups run nightly.")
    open_state(kb).close()
    kb.state_db.unlink()
    for lock in kb.state_dir.glob("*.lock"):
        lock.unlink()
    with read_only(kb.state_dir), pytest.raises(StorageError) as caught:
        open_state(kb)
    assert "writable" in caught.value.hint


def test_a_state_db_made_unwritable_under_live_connections_refuses_writes_and_lives(kb):
    """A connection that wrote through the WAL is open when state.db stops taking
    writes: writes are refused with a StorageError, reads still answer, and the process
    is never killed (SQLite's shared memory stays writable; a write to its mapping of
    a file the kernel refuses to change is a SIGBUS, which ends every thread at once)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    open_state(kb).close()
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "tests.fakes.live_unwritable", str(kb.root)],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-3000:]}"
    assert "20 writes refused" in done.stdout


def test_the_model_call_log_never_makes_a_deleted_state_db_again_from_its_old_wal(kb):
    """The model call log keeps a connection of its own and opens the file again after
    a failure. state.db deleted under a server: the log must not be what makes it again
    (SQLite would take the deleted file's WAL and shared memory for the new one's); the
    next open_state makes it, rebuilt, and says so."""
    import asyncio

    from kb_ai.llm.store import CallStore

    _source(kb, "backups", "Backups run nightly.")
    held = open_state(kb)  # keeps state.db-wal and -shm alive
    held.execute("CREATE TABLE IF NOT EXISTS only_old (x)")
    held.execute("INSERT INTO only_old VALUES (1)")
    held.commit()
    kb.state_db.unlink()
    try:
        log = CallStore(kb.state_db)
        try:
            with pytest.raises(StorageError):
                log.get("a key")  # (a lookup then makes the call, unlogged)
            assert not kb.state_db.exists()
        finally:
            asyncio.run(log.aclose())
        with closing(open_state(kb)) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            assert state_loss(conn) is not None
            assert get_source(conn, "/notes/backups.md")["status"] == "ok"
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert "only_old" not in tables
    finally:
        held.close()
