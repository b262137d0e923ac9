"""State: .kb-ai/state.db, the SQLite file kb-ai keeps out of git.

Each component migrates its own tables with :func:`apply_migrations` under its own name;
the wiki owns ``sources`` and ``runs``. Tables of other components are never touched.
Helpers that write commit at once, unless the caller already holds a transaction (then
the caller commits).

With a shared database (``database_url``, wiki/database.py) the compile runs live there
instead (the helpers below are handed state.db's connection and find it themselves), so
Status on every server lists every server's runs; each run names the machine it ran on
(``host``), whose process only that machine can look for. A running compile writes a
heartbeat every few seconds (:func:`beat_run`): a run whose heartbeat stopped died, on
whichever machine (:func:`run_condition`).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from kb_ai.errors import StorageError, file_storage_error, storage_error
from wiki.database import PgConnection, shared_of_state
from wiki.rebuild import LOST, sources_on_disk
from wiki.schema import apply_migrations

if TYPE_CHECKING:
    from wiki.layout import KnowledgeBase

WIKI_MIGRATIONS = (
    """CREATE TABLE sources (
        origin TEXT PRIMARY KEY,
        raw_path TEXT,
        checksum TEXT,
        model TEXT,
        prompt_version TEXT,
        status TEXT,
        error TEXT,
        articles TEXT,  -- JSON list of article paths
        updated_at TEXT
    )""",
    """CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        started_at TEXT,
        finished_at TEXT,
        summary TEXT,  -- JSON object
        commit_sha TEXT
    )""",
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)",
    # The articles the compile run under way has written (see journal_article): what a
    # run killed before its commit left in the work tree, to reconcile before the next.
    """CREATE TABLE run_articles (
        path TEXT PRIMARY KEY,
        previous TEXT,  -- the file's text before the run wrote it; NULL: there was none
        written TEXT  -- sha256 of what the run wrote; NULL: killed before it was known
    )""",
    # A run is recorded when it starts, so Status shows compiles in progress whoever
    # started them (the CLI, the web queue, an agent hook), and the stage each is at.
    "ALTER TABLE runs ADD COLUMN started_by TEXT",
    "ALTER TABLE runs ADD COLUMN state TEXT",  # running, done, failed or interrupted
    "ALTER TABLE runs ADD COLUMN stage TEXT",
    "ALTER TABLE runs ADD COLUMN done INTEGER",
    "ALTER TABLE runs ADD COLUMN total INTEGER",
    "ALTER TABLE runs ADD COLUMN pid INTEGER",
    # when the running process last said it lives (see beat_run): a run killed, or on a
    # machine that is gone, stops beating, and shows as died instead of running forever
    "ALTER TABLE runs ADD COLUMN heartbeat TEXT",
)

# The runs in a shared database: the same columns, and the machine each ran on.
RUNS_SHARED_MIGRATIONS = (
    """CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        started_at TEXT,
        finished_at TEXT,
        summary TEXT,
        commit_sha TEXT,
        started_by TEXT,
        state TEXT,
        stage TEXT,
        done INTEGER,
        total INTEGER,
        pid INTEGER,
        host TEXT
    )""",
    "CREATE INDEX runs_state ON runs (state, id)",
    "ALTER TABLE runs ADD COLUMN heartbeat TEXT",
)

#: How often a running compile's process writes its heartbeat (compiler/runs.py).
RUN_BEAT_SECONDS = 5.0
#: A run marked running whose heartbeat is older than this died (killed, its machine
#: gone): twelve beats missed, so a busy database or a slow disk never makes a live run
#: look dead.
RUN_STALE_SECONDS = 60.0

#: meta key: set when the run under way has recorded its sources (its articles are kept).
RUN_RECORDED = "run_recorded"
#: meta key: when state.db was found missing and made again (see wiki/rebuild.py);
#: a JSON object {"at": ..., "rebuilt": null or what was rebuilt from the KB}.
STATE_LOST = "state_lost"

log = logging.getLogger(__name__)


class StateCursor(sqlite3.Cursor):
    """A cursor whose storage failures (a full disk, a corrupted file) are StorageError."""

    def execute(self, sql: str, parameters: Any = (), /) -> StateCursor:
        try:
            return super().execute(sql, parameters)
        except sqlite3.Error as exc:
            raise _translated(exc, self.connection, "read or write") from exc

    def executemany(self, sql: str, seq: Any, /) -> StateCursor:
        try:
            return super().executemany(sql, seq)
        except sqlite3.Error as exc:
            raise _translated(exc, self.connection, "write to") from exc

    def fetchone(self) -> Any:
        try:
            return super().fetchone()
        except sqlite3.Error as exc:
            raise _translated(exc, self.connection, "read") from exc

    def fetchmany(self, size: int | None = None) -> list[Any]:
        try:
            return super().fetchmany(self.arraysize if size is None else size)
        except sqlite3.Error as exc:
            raise _translated(exc, self.connection, "read") from exc

    def fetchall(self) -> list[Any]:
        try:
            return super().fetchall()
        except sqlite3.Error as exc:
            raise _translated(exc, self.connection, "read") from exc

    def __next__(self) -> Any:
        try:
            return super().__next__()
        except sqlite3.Error as exc:
            raise _translated(exc, self.connection, "read") from exc


class StateConnection(sqlite3.Connection):
    """A connection to state.db whose storage failures cross out of it as StorageError
    (what failed, where, what to do), so every edge can say so in one line; the faults
    of a statement (a syntax error, a missing table) stay sqlite3 errors."""

    path = ""

    def cursor(self, factory: Any = StateCursor) -> StateCursor:  # type: ignore[override]
        return super().cursor(factory)

    def execute(self, sql: str, parameters: Any = (), /) -> StateCursor:  # type: ignore[override]
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, seq: Any, /) -> StateCursor:  # type: ignore[override]
        return self.cursor().executemany(sql, seq)

    def executescript(self, script: str, /) -> sqlite3.Cursor:
        try:
            return super().executescript(script)
        except sqlite3.Error as exc:
            raise _translated(exc, self, "write to") from exc

    def commit(self) -> None:
        try:
            super().commit()
        except sqlite3.Error as exc:
            raise _translated(exc, self, "write to") from exc

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> bool:
        try:
            return super().__exit__(kind, value, traceback)
        except sqlite3.Error as exc:
            raise _translated(exc, self, "write to") from exc


def _translated(exc: sqlite3.Error, conn: Any, doing: str) -> Exception:
    path = getattr(conn, "path", "") or "state.db"
    return storage_error(exc, path, doing) or exc


def open_state(kb: KnowledgeBase, *, any_thread: bool = False) -> sqlite3.Connection:
    """A connection to the KB's state.db (created and migrated as needed).

    A state.db missing from a knowledge base that was used (it has sources or queued
    uploads) is made again and the loss noted (``STATE_LOST``), never silently: the
    compile worker and `kb-ai status` rebuild and report it (wiki/rebuild.py). Storage
    failures (a full disk, a corrupted file) raise :class:`StorageError`.

    ``any_thread``: usable from other threads than this one, one at a time (the caller
    keeps them from using it at once)."""
    try:
        kb.state_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(
            f"Could not create the state folder {kb.state_dir}: {exc.strerror}",
            path=str(kb.state_db),
            cause="readonly" if isinstance(exc, PermissionError) else "io",
            transient=False,
            hint=f"make {kb.state_dir.parent} writable by this user",
        ) from exc
    conn = _connect(kb, any_thread) if kb.state_db.exists() else None
    return conn if conn is not None else _open_missing(kb, any_thread)


def _connect(
    kb: KnowledgeBase, any_thread: bool, new: Path | None = None
) -> StateConnection | None:
    """A connection to state.db, or None when it is not there (deleted since it was
    looked for); ``new``: create that file instead.

    SQLite is never let create state.db itself (``mode=rw``): a file it made where one
    was just deleted would take the deleted one's WAL and shared memory, and resetting
    that shared memory (it truncates the file) while other connections of this process
    have it mapped kills the whole process with SIGBUS. Only :func:`_open_missing` makes
    state.db, after removing those files."""
    path = new or kb.state_db
    uri = f"file:{quote(str(path.absolute()))}?mode={'rwc' if new else 'rw'}"
    try:
        conn = sqlite3.connect(
            uri,
            uri=True,
            timeout=5.0,
            check_same_thread=not any_thread,
            factory=StateConnection,
        )
    except sqlite3.Error as exc:
        if new is None and not path.exists():  # deleted since it was looked for
            return None
        raise _translated(exc, None, "open") from exc
    conn.path = str(kb.state_db)
    try:
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA busy_timeout = 5000")
        conn.execute("PRAGMA mmap_size = 0")  # (SQLite's default; a build may differ)
        _use_wal(conn)
        conn.execute("PRAGMA synchronous = NORMAL")
        apply_migrations(conn, "wiki", WIKI_MIGRATIONS)
    except BaseException:
        conn.close()
        raise
    return conn


def _open_missing(kb: KnowledgeBase, any_thread: bool) -> StateConnection:
    """state.db is not there: made again under a lock (so two threads finding it gone
    make one file), without the WAL and shared-memory files of the one that was deleted
    (SQLite would replay the old WAL into the new file). In a knowledge base that was
    used, the loss is noted and what the files hold rebuilt before the new file takes
    the name, so no one opens it before it says what it lost (the queue is rebuilt from
    that note)."""
    from wiki.lock import KbLock  # wiki.lock imports nothing of state

    lock = KbLock(kb.state_dir / "state.lock")
    try:
        lock.acquire()
    except OSError as exc:  # a read-only folder, a full disk
        raise file_storage_error(exc, kb.state_db, "create") from exc
    try:
        if kb.state_db.exists() and (conn := _connect(kb, any_thread)) is not None:
            return conn  # another thread or process made it meanwhile
        new = kb.state_db.with_name(".state.db.new")
        for db in (new, kb.state_db):
            for suffix in ("", "-wal", "-shm", "-journal"):
                if db is new or suffix:
                    db.with_name(db.name + suffix).unlink(missing_ok=True)
        conn = _connect(kb, False, new)
        try:
            if _was_used(kb):
                _note_loss(kb, conn)
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # all of it in the file itself
        finally:
            conn.close()
        try:
            os.replace(new, kb.state_db)
        except OSError as exc:
            raise file_storage_error(exc, kb.state_db, "create") from exc
        conn = _connect(kb, any_thread)
        if conn is None:  # deleted again at once
            raise StorageError(
                f"Could not keep the state database {kb.state_db}: it was deleted again"
                " as soon as it was made",
                path=str(kb.state_db),
                cause="io",
                transient=True,
                hint=f"find what deletes files in {kb.state_dir} and stop it",
            )
        return conn
    finally:
        lock.release()


def _note_loss(kb: KnowledgeBase, conn: sqlite3.Connection) -> None:
    log.warning("%s was missing: made again, rebuilding it from the knowledge base", kb.state_db)
    set_meta(conn, STATE_LOST, json.dumps({"at": _now(), "lost": LOST, "rebuilt": {}}))
    note_rebuilt(conn, sources=_rebuild_sources(kb, conn))
    log.warning("%s rebuilt: the sources in raw/ are known again; lost: %s", kb.state_db, LOST)


def _rebuild_sources(kb: KnowledgeBase, conn: sqlite3.Connection) -> int:
    """The ``sources`` rows of every raw source, as the files tell them (wiki/rebuild.py)."""
    known = sources_on_disk(kb)
    conn.execute("BEGIN IMMEDIATE")
    try:
        for src in known:
            upsert_source(
                conn,
                src.origin,
                raw_path=src.raw_path,
                checksum=src.checksum,
                model=src.model,
                prompt_version=src.prompt_version,
                status="ok" if src.error is None else "failed",
                error=src.error,
                articles=src.articles,
                updated_at=src.ingested_at,
            )
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    return len(known)


def state_loss(conn: sqlite3.Connection) -> dict[str, Any] | None:
    """When state.db was found missing and made again, what was rebuilt and what is
    lost (None: it never was)."""
    value = get_meta(conn, STATE_LOST)
    return json.loads(value) if value else None


def note_rebuilt(conn: sqlite3.Connection, **rebuilt: int) -> None:
    """Add to the loss note what was rebuilt (``sources=3``, ``tasks=1``)."""
    loss = state_loss(conn) or {"at": _now(), "lost": LOST}
    loss["rebuilt"] = {**(loss.get("rebuilt") or {}), **rebuilt}
    set_meta(conn, STATE_LOST, json.dumps(loss))


def _was_used(kb: KnowledgeBase) -> bool:
    """Whether the knowledge base holds anything a state.db knew about: sources in raw/,
    queued uploads in the inbox."""
    return any(kb.raw_dir.glob("*.md")) or any((kb.state_dir / "inbox").glob("*"))


def _use_wal(conn: sqlite3.Connection) -> None:
    """Switch a new state.db to WAL (a setting the file keeps). The switch needs the
    database to itself, and SQLite does not wait for that: when two processes open a new
    state.db at once (a server and a hook worker), one is told "database is locked".
    It tries again for up to five seconds."""
    for attempt in range(50):
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
                return
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except StorageError as exc:
            if exc.cause != "busy" or attempt == 49:
                raise
            time.sleep(0.1)


def get_source(conn: sqlite3.Connection, origin: str) -> sqlite3.Row | None:
    """The state of the source ``origin``, or None if it was never seen."""
    return conn.execute("SELECT * FROM sources WHERE origin = ?", (origin,)).fetchone()


def all_sources(conn: sqlite3.Connection) -> dict[str, sqlite3.Row]:
    """The state of every source by origin, in one query."""
    return {row["origin"]: row for row in conn.execute("SELECT * FROM sources")}


def upsert_source(
    conn: sqlite3.Connection,
    origin: str,
    *,
    raw_path: str | None = None,
    checksum: str | None = None,
    model: str | None = None,
    prompt_version: str | None = None,
    status: str | None = None,
    error: str | None = None,
    articles: list[str] | None = None,
    updated_at: str | None = None,
) -> None:
    """Insert or replace the state of ``origin`` (every column, as given)."""
    _write(
        conn,
        "INSERT INTO sources (origin, raw_path, checksum, model, prompt_version, status, error,"
        " articles, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT(origin) DO UPDATE SET raw_path = excluded.raw_path,"
        " checksum = excluded.checksum, model = excluded.model,"
        " prompt_version = excluded.prompt_version, status = excluded.status,"
        " error = excluded.error, articles = excluded.articles, updated_at = excluded.updated_at",
        (
            origin,
            raw_path,
            checksum,
            model,
            None if prompt_version is None else str(prompt_version),
            status,
            error,
            json.dumps(list(articles or []), ensure_ascii=False),
            updated_at or _now(),
        ),
    )


def delete_source(conn: sqlite3.Connection, origin: str) -> None:
    """Forget the source ``origin`` (it was removed from the knowledge base)."""
    _write(conn, "DELETE FROM sources WHERE origin = ?", (origin,))


def set_source_articles(conn: sqlite3.Connection, origin: str, articles: list[str]) -> None:
    """Record the articles the source ``origin`` feeds now."""
    _write(
        conn,
        "UPDATE sources SET articles = ? WHERE origin = ?",
        (json.dumps(list(articles), ensure_ascii=False), origin),
    )


def source_articles(row: sqlite3.Row) -> list[str]:
    """The article paths recorded for a source row."""
    return json.loads(row["articles"]) if row["articles"] else []


def runs_connection(conn: sqlite3.Connection) -> Any:
    """Where the compile runs are: the shared database's ``runs`` (every server's), when
    the knowledge base of state.db's ``conn`` has one, else state.db's own."""
    shared = shared_of_state(conn)
    if shared is None:
        return conn
    shared.migrate("runs", RUNS_SHARED_MIGRATIONS)
    db = PgConnection(shared)
    path = getattr(conn, "path", "")
    if (shared.url, path) not in _runs_numbered:
        _number_after_local(conn, db)
        _runs_numbered.add((shared.url, path))
    return db


_runs_numbered: set[tuple[str, str]] = set()  # (database, state.db) checked by this process


def _number_after_local(conn: sqlite3.Connection, db: PgConnection) -> None:
    """New shared runs are numbered after this server's runs in state.db, from before it
    shared a database: a run's id names its review branch (``review/<id>``), and one
    held then must not be overwritten by a new run of the same number."""
    row = conn.execute("SELECT MAX(id) FROM runs").fetchone()
    mine = int(row[0] or 0) if row else 0
    if mine:
        db.execute(
            "SELECT setval('runs_id_seq', ?) FROM runs_id_seq WHERE last_value < ?", (mine, mine)
        )


def _host() -> str:
    return socket.gethostname()


def record_run(
    conn: sqlite3.Connection,
    started: datetime | str,
    finished: datetime | str,
    summary: dict[str, Any],
    commit: str | None,
) -> int:
    """Record a compile run; returns its id."""
    db = runs_connection(conn)
    values = (_stamp(started), _stamp(finished), json.dumps(summary, ensure_ascii=False), commit)
    if db is conn:
        cursor = _write(
            conn,
            "INSERT INTO runs (started_at, finished_at, summary, commit_sha) VALUES (?, ?, ?, ?)",
            values,
        )
        return int(cursor.lastrowid)
    return _insert_id(
        db,
        "INSERT INTO runs (started_at, finished_at, summary, commit_sha, host)"
        " VALUES (?, ?, ?, ?, ?) RETURNING id",
        (*values, _host()),
    )


def start_run(conn: sqlite3.Connection, started_by: str, total: int, pid: int) -> int:
    """Record a compile run as it starts; returns its id (see :func:`finish_run`)."""
    db = runs_connection(conn)
    if db is conn:
        cursor = _write(
            conn,
            "INSERT INTO runs (started_at, started_by, state, stage, done, total, pid, heartbeat)"
            " VALUES (?, ?, 'running', 'starting', 0, ?, ?, ?)",
            (_now(), started_by, total, pid, _beat_stamp()),
        )
        return int(cursor.lastrowid)
    return _insert_id(
        db,
        "INSERT INTO runs (started_at, started_by, state, stage, done, total, pid, host,"
        " heartbeat) VALUES (?, ?, 'running', 'starting', 0, ?, ?, ?, ?) RETURNING id",
        (_now(), started_by, total, pid, _host(), _beat_stamp()),
    )


def set_run_stage(conn: sqlite3.Connection, run_id: int, stage: str, done: int, total: int) -> None:
    """Where a running compile is: its stage and how many of its items are done."""
    _write(
        runs_connection(conn),
        "UPDATE runs SET stage = ?, done = ?, total = ?, heartbeat = ?"
        " WHERE id = ? AND state = 'running'",
        (stage, done, total, _beat_stamp(), run_id),
    )


def beat_run(conn: sqlite3.Connection, run_id: int) -> None:
    """The running compile ``run_id`` is alive now (its heartbeat)."""
    _write(
        runs_connection(conn),
        "UPDATE runs SET heartbeat = ? WHERE id = ? AND state = 'running'",
        (_beat_stamp(), run_id),
    )


def finish_run(
    conn: sqlite3.Connection,
    run_id: int,
    state: str,
    summary: dict[str, Any],
    commit: str | None,
) -> None:
    """Close a run started with :func:`start_run`: done, failed or interrupted."""
    _write(
        runs_connection(conn),
        "UPDATE runs SET state = ?, stage = NULL, finished_at = ?, summary = ?, commit_sha = ?"
        " WHERE id = ?",
        (state, _now(), json.dumps(summary, ensure_ascii=False), commit, run_id),
    )


def compile_under_way(conn: sqlite3.Connection) -> Any:
    """The newest run still going (its process alive on this machine), or None."""
    db = runs_connection(conn)
    for row in db.execute("SELECT * FROM runs WHERE state = 'running' ORDER BY id DESC"):
        if row["pid"] and _here(row) and pid_alive(row["pid"]) and not run_died(row):
            return row
    return None


def run_condition(row: Any, now: datetime | None = None) -> str:
    """A run's state as Status shows it: its recorded state (done, failed, interrupted),
    or, for one marked running, ``running`` while it lives, ``stopped`` when its process
    is gone from this machine, ``died`` when its heartbeat stopped (killed, or on a
    machine that is gone: only its heartbeat can tell from here)."""
    state = row["state"] or "done"  # runs recorded before runs were tracked as they went
    if state != "running":
        return state
    if run_stopped(row):
        return "stopped"
    if run_died(row, now):
        return "died"
    return state


def run_stopped(row: Any) -> bool:
    """Whether a run marked running was stopped: its process is gone from this machine
    (a run on another machine is seen dead by its heartbeat: :func:`run_died`)."""
    return (
        row["state"] == "running" and bool(row["pid"]) and _here(row) and not pid_alive(row["pid"])
    )


def run_died(row: Any, now: datetime | None = None) -> bool:
    """Whether a run marked running has given no sign of life for RUN_STALE_SECONDS:
    its heartbeat (or, for a run recorded before heartbeats, its start) is that old."""
    if row["state"] != "running":
        return False
    last = last_sign_of_life(row)
    if last is None:
        return False
    return ((now or datetime.now(UTC)) - last).total_seconds() > RUN_STALE_SECONDS


def last_sign_of_life(row: Any) -> datetime | None:
    """When a run last said it lives: its heartbeat, else its start."""
    names = row.keys()
    for key in ("heartbeat", "started_at"):
        value = row[key] if key in names else None
        if value:
            try:
                when = datetime.fromisoformat(str(value))
            except ValueError:
                continue
            return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
    return None


def _here(row: Any) -> bool:
    """Whether ``row``'s run was on this machine (state.db's runs all were)."""
    names = row.keys()  # (``in row`` looks among a row's values, not its names)
    host = row["host"] if "host" in names else None
    return not host or host == _host()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it is there
        return True
    return True


def recent_runs(conn: sqlite3.Connection, limit: int = 10) -> list[Any]:
    """The newest runs first (running ones included)."""
    db = runs_connection(conn)
    return db.execute("SELECT * FROM runs ORDER BY id DESC LIMIT ?", (limit,)).fetchall()


def last_run(conn: sqlite3.Connection) -> Any:
    """The most recent finished run, or None before the first."""
    return (
        runs_connection(conn)
        .execute("SELECT * FROM runs WHERE finished_at IS NOT NULL ORDER BY id DESC LIMIT 1")
        .fetchone()
    )


def get_meta(conn: sqlite3.Connection, key: str) -> str | None:
    """A value kb-ai keeps about the knowledge base (see :func:`set_meta`), or None."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else row[0]


def set_meta(conn: sqlite3.Connection, key: str, value: str | None) -> None:
    _write(
        conn,
        "INSERT INTO meta (key, value) VALUES (?, ?)"
        " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def journal_article(
    conn: sqlite3.Connection, path: str, previous: str | None, written: str | None = None
) -> None:
    """Note that the run under way writes the article ``path``: first with the text it
    had (``previous``), then again with the sha256 of what was ``written``."""
    _write(
        conn,
        "INSERT INTO run_articles (path, previous, written) VALUES (?, ?, ?)"
        " ON CONFLICT(path) DO UPDATE SET written = excluded.written",
        (path, previous, written),
    )


def journaled_articles(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    """The articles an unfinished run wrote (none once a run has finished)."""
    return list(conn.execute("SELECT * FROM run_articles ORDER BY path"))


def clear_journal(conn: sqlite3.Connection) -> None:
    """Forget the run's articles: it committed them, or they were rolled back."""
    with conn:
        conn.execute("DELETE FROM run_articles")
        conn.execute("DELETE FROM meta WHERE key = ?", (RUN_RECORDED,))


def _write(conn: Any, sql: str, params: tuple[Any, ...]) -> Any:
    owned = not conn.in_transaction
    cursor = conn.execute(sql, params)
    if owned:
        conn.commit()
    return cursor


def _insert_id(db: PgConnection, sql: str, params: tuple[Any, ...]) -> int:
    """The id a shared database gave the row an ``INSERT ... RETURNING id`` made."""
    return int(db.execute(sql, params).fetchone()[0])


def _stamp(value: datetime | str) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _beat_stamp() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")
