"""State: .kb-ai/state.db, the SQLite file kb-ai keeps out of git.

Each component migrates its own tables with :func:`apply_migrations` under its own name;
the wiki owns ``sources`` and ``runs``. Tables of other components are never touched.
Helpers that write commit at once, unless the caller already holds a transaction (then
the caller commits).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

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
)

#: meta key: set when the run under way has recorded its sources (its articles are kept).
RUN_RECORDED = "run_recorded"


def open_state(kb: KnowledgeBase, *, any_thread: bool = False) -> sqlite3.Connection:
    """A connection to the KB's state.db (created and migrated as needed).

    ``any_thread``: usable from other threads than this one, one at a time (the caller
    keeps them from using it at once)."""
    kb.state_dir.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(kb.state_db, timeout=5.0, check_same_thread=not any_thread)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA busy_timeout = 5000")
    _use_wal(conn)
    conn.execute("PRAGMA synchronous = NORMAL")
    apply_migrations(conn, "wiki", WIKI_MIGRATIONS)
    return conn


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
        except sqlite3.OperationalError as exc:
            busy = getattr(exc, "sqlite_errorcode", None) in (
                sqlite3.SQLITE_BUSY,
                sqlite3.SQLITE_LOCKED,
            )
            if not busy or attempt == 49:
                raise
            time.sleep(0.1)


def apply_migrations(conn: sqlite3.Connection, component: str, steps: tuple[str, ...]) -> int:
    """Run the steps of ``component`` not yet applied, in order; returns its new version.

    The applied version of each component is kept in the ``schema_versions`` table.
    Append new steps to the end; never edit or reorder the old ones.
    """
    try:  # the common case, an up-to-date schema, takes no write lock
        row = conn.execute(
            "SELECT version FROM schema_versions WHERE component = ?", (component,)
        ).fetchone()
    except sqlite3.OperationalError:  # no schema_versions table yet
        row = None
    if row is not None and row[0] >= len(steps):
        return row[0]
    with conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_versions"
            " (component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
        )
    # BEGIN IMMEDIATE: two processes opening a new state.db must not both migrate it.
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute(
            "SELECT version FROM schema_versions WHERE component = ?", (component,)
        ).fetchone()
        version = row[0] if row else 0
        for step in steps[version:]:
            conn.execute(step)
        if len(steps) > version:
            conn.execute(
                "INSERT INTO schema_versions (component, version) VALUES (?, ?)"
                " ON CONFLICT(component) DO UPDATE SET version = excluded.version",
                (component, len(steps)),
            )
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    return max(version, len(steps))


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


def record_run(
    conn: sqlite3.Connection,
    started: datetime | str,
    finished: datetime | str,
    summary: dict[str, Any],
    commit: str | None,
) -> int:
    """Record a compile run; returns its id."""
    cursor = _write(
        conn,
        "INSERT INTO runs (started_at, finished_at, summary, commit_sha) VALUES (?, ?, ?, ?)",
        (_stamp(started), _stamp(finished), json.dumps(summary, ensure_ascii=False), commit),
    )
    return int(cursor.lastrowid)


def start_run(conn: sqlite3.Connection, started_by: str, total: int, pid: int) -> int:
    """Record a compile run as it starts; returns its id (see :func:`finish_run`)."""
    cursor = _write(
        conn,
        "INSERT INTO runs (started_at, started_by, state, stage, done, total, pid)"
        " VALUES (?, ?, 'running', 'starting', 0, ?, ?)",
        (_now(), started_by, total, pid),
    )
    return int(cursor.lastrowid)


def set_run_stage(conn: sqlite3.Connection, run_id: int, stage: str, done: int, total: int) -> None:
    """Where a running compile is: its stage and how many of its items are done."""
    _write(
        conn,
        "UPDATE runs SET stage = ?, done = ?, total = ? WHERE id = ? AND state = 'running'",
        (stage, done, total, run_id),
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
        conn,
        "UPDATE runs SET state = ?, stage = NULL, finished_at = ?, summary = ?, commit_sha = ?"
        " WHERE id = ?",
        (state, _now(), json.dumps(summary, ensure_ascii=False), commit, run_id),
    )


def compile_under_way(conn: sqlite3.Connection) -> sqlite3.Row | None:
    """The newest run still going (its process alive on this machine), or None."""
    for row in conn.execute("SELECT * FROM runs WHERE state = 'running' ORDER BY id DESC"):
        if row["pid"] and pid_alive(row["pid"]):
            return row
    return None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it is there
        return True
    return True


def recent_runs(conn: sqlite3.Connection, limit: int = 10) -> list[sqlite3.Row]:
    """The newest runs first (running ones included)."""
    return conn.execute("SELECT * FROM runs ORDER BY id DESC LIMIT ?", (limit,)).fetchall()


def last_run(conn: sqlite3.Connection) -> sqlite3.Row | None:
    """The most recent finished run, or None before the first."""
    return conn.execute(
        "SELECT * FROM runs WHERE finished_at IS NOT NULL ORDER BY id DESC LIMIT 1"
    ).fetchone()


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


def _write(conn: sqlite3.Connection, sql: str, params: tuple[Any, ...]) -> sqlite3.Cursor:
    owned = not conn.in_transaction
    cursor = conn.execute(sql, params)
    if owned:
        conn.commit()
    return cursor


def _stamp(value: datetime | str) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
