"""The shared database: PostgreSQL, when ``database_url`` names one, for the state that
several processes on several machines must share (today: the task queue and its leases,
and the compile lock). Without it everything stays in .kb-ai/state.db, as before.

One seam, below compiler/ and retrieval/:

- :func:`database_url`: the URL, from ``KB_AI_DATABASE_URL`` or kb-ai.toml's
  ``database_url`` (the same precedence as kb_ai/settings.py, read here because wiki/
  is opened by processes that load no settings, such as agent hooks).
- :func:`shared_database`: one pool per URL and process, checked once when first opened:
  the server answers, the schema table exists, and the database belongs to this
  knowledge base (its id is the sha of the KB's first git commit, the same in every
  clone of its remote). A database of another knowledge base is refused.
- :class:`PgConnection`: a ``sqlite3.Connection``-like face over the pool (``?``
  placeholders, ``with conn:`` transactions, ``BEGIN IMMEDIATE``/``COMMIT``, rows read
  by index or by name), so the queue keeps one text of its SQL for both databases.
- :meth:`SharedDatabase.migrate`: versioned steps per component, as wiki/schema.py does
  for SQLite; a database migrated by a newer kb-ai is refused.
- :func:`store_connection`: what each store (queue, people, audit, ...) opens its
  tables with: the shared database when there is one, else its state.db, migrated.

psycopg is imported only when a URL is set (the ``postgres`` extra).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import subprocess
import threading
import time
import tomllib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb_ai.errors import ConfigError, DatabaseAwayError
from kb_ai.pgurl import url_problem
from wiki.held import Held
from wiki.schema import apply_migrations

if TYPE_CHECKING:
    from wiki.layout import KnowledgeBase

ENV = "KB_AI_DATABASE_URL"
log = logging.getLogger(__name__)
_opening = threading.Lock()
#: the channel a NOTIFY on new or returned tasks is sent on
TASKS_CHANNEL = "kb_ai_tasks"
#: the channel a NOTIFY is sent on after each push to the wiki remote: followers wake
WIKI_CHANNEL = "kb_ai_wiki"
#: advisory lock namespaces (the first of the two int4 keys)
LOCK_COMPILE = 27_001
LOCK_OWNER = 27_002
LOCK_MIGRATE = 27_003

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS kb_ai_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS kb_ai_meta (key TEXT PRIMARY KEY, value TEXT)",
)


def database_url(kb: KnowledgeBase) -> str | None:
    """The shared database's URL for ``kb``, or None: state stays in state.db.

    ``KB_AI_DATABASE_URL`` wins; kb-ai.toml is read once per process and knowledge base
    (every store and lock asks, and a process must not move to another database midway
    because the file was edited: a restart takes a new URL)."""
    value = os.environ.get(ENV)
    if value is None:
        root = kb.root.resolve()
        with _opening:
            if root not in _toml_urls:
                _toml_urls[root] = _toml_url(root / "kb-ai.toml")
            value = _toml_urls[root]
    value = str(value or "").strip()
    return value or None


def _toml_url(path: Path) -> str | None:
    try:
        value = tomllib.loads(path.read_text(encoding="utf-8")).get("database_url")
    except (OSError, ValueError):  # missing, or bad TOML (settings say so at start)
        return None
    return str(value) if value is not None else None


def shown_url(url: str) -> str:
    """The URL without its password, to print."""
    return re.sub(r"(://[^:/@]+):[^@/]*@", r"\1:***@", url)


def check_url(url: str) -> None:
    """A URL that names no PostgreSQL database is refused before anything connects."""
    found = url_problem(url)
    if found is not None:
        raise ConfigError(f"database_url {shown_url(url)!r} {found[0]}", hint=found[1])


def kb_id(kb: KnowledgeBase) -> str:
    """The knowledge base's id: the sha of its first commit (every clone shares it)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(kb.root), "rev-list", "--max-parents=0", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        out = []
    return out[-1] if out else ""


def unreachable(url: str, exc: BaseException, doing: str = "reach") -> DatabaseAwayError:
    """One line saying the shared database did not answer, and what to do."""
    first = _first_line(exc)
    return DatabaseAwayError(
        f"Could not {doing} the shared database {shown_url(url)}: {first}",
        path=shown_url(url),
        cause="io",
        transient=True,
        hint="check that PostgreSQL runs there, that the database exists (createdb NAME"
        " makes it) and that database_url (KB_AI_DATABASE_URL) names it; kb-ai"
        " reconnects by itself once it answers",
    )


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class _PoolWarnings(logging.Filter):
    """psycopg_pool warns at every try to reconnect (every few seconds while the database
    is away) and for each connection it drops; the process says it once instead (see
    :class:`Presence`). Its warnings go to debug; an error still passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.WARNING:
            return True
        if record.msg == "error connecting in %r: %s" and len(record.args or ()) == 2:
            name, error = record.args  # type: ignore[misc]
            for db in list(_databases.values()):
                if db.pool.name == name:
                    db.presence.gone(error)  # type: ignore[arg-type]
        log.debug("psycopg_pool: %s", record.getMessage())
        return False


def _quiet_pool_warnings() -> None:
    for name in ("psycopg.pool", "psycopg_pool.sched"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _PoolWarnings) for f in logger.filters):
            logger.addFilter(_PoolWarnings())


class Presence:
    """Whether this process reaches the shared database, said once per change: one
    warning when it stops answering (what failed, and that kb-ai reconnects by itself)
    and one when it answers again, however many requests, workers and reconnection
    tries meet the outage in between."""

    def __init__(self, shown: str) -> None:
        self.shown = shown
        self.away_since: float | None = None
        self._lock = threading.Lock()

    def gone(self, exc: BaseException | str) -> None:
        with self._lock:
            if self.away_since is not None:
                return
            self.away_since = time.monotonic()
        first = exc if isinstance(exc, str) else _first_line(exc)
        log.warning(
            "The shared database %s does not answer (%s): requests get a 503 and the"
            " workers wait; kb-ai reconnects by itself",
            self.shown, first,
        )  # fmt: skip

    def back(self) -> None:
        if self.away_since is None:  # (read without the lock: the usual case, fast)
            return
        with self._lock:
            since, self.away_since = self.away_since, None
        if since is not None:
            log.warning(
                "The shared database %s answers again (away for %.0f s)",
                self.shown, time.monotonic() - since,
            )  # fmt: skip


def _connection_errors() -> tuple[type[BaseException], ...]:
    import psycopg
    import psycopg_pool

    return (psycopg.OperationalError, psycopg.InterfaceError, psycopg_pool.PoolTimeout)


def translate(sql: str, with_params: bool = True) -> str:
    """SQLite's SQL as PostgreSQL takes it: ``?`` placeholders, JSON paths (``%`` is
    doubled only where psycopg reads placeholders: when there are parameters)."""
    if with_params:
        sql = sql.replace("%", "%%").replace("?", "%s")
    return re.sub(r"json_extract\((\w+), '\$\.(\w+)'\)", r"(\1::jsonb ->> '\2')", sql)


def translate_ddl(step: str) -> str:
    """A SQLite schema step as PostgreSQL takes it: a rowid key becomes an identity,
    a BLOB a BYTEA."""
    step = re.sub(r"\bBLOB\b", "BYTEA", step)
    return re.sub(
        r"\bid INTEGER PRIMARY KEY\b",
        "id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
        step,
    )


def key_of(name: str) -> int:
    """A name as the second int4 key of an advisory lock."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "big", signed=True)


class Row(tuple):
    """A row read by index or by column name, like ``sqlite3.Row``."""

    names: dict[str, int] = {}

    def __getitem__(self, key: Any) -> Any:  # type: ignore[override]
        if isinstance(key, str):
            return tuple.__getitem__(self, self.names[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self.names)


class Result:
    """A statement's rows, read at once (the connection went back to the pool)."""

    def __init__(self, rows: list[Row], rowcount: int) -> None:
        self._rows = rows
        self._at = 0
        self.rowcount = rowcount

    def fetchone(self) -> Row | None:
        if self._at >= len(self._rows):
            return None
        self._at += 1
        return self._rows[self._at - 1]

    def fetchall(self) -> list[Row]:
        rest = self._rows[self._at :]
        self._at = len(self._rows)
        return rest

    def __iter__(self) -> Iterator[Row]:
        return iter(self.fetchall())


def _run(conn: Any, sql: str, params: Sequence[Any]) -> Result:
    cur = conn.execute(translate(sql, bool(params)), tuple(params) if params else None)
    if cur.description is None:
        return Result([], cur.rowcount)
    names = {col.name: i for i, col in enumerate(cur.description)}
    kind = type("Row", (Row,), {"names": names})
    return Result([kind(r) for r in cur.fetchall()], cur.rowcount)


class SharedDatabase:
    """A PostgreSQL database several kb-ai processes share, through one pool per process."""

    def __init__(self, url: str) -> None:
        from psycopg_pool import ConnectionPool

        self.url = url
        self.shown = shown_url(url)
        self.presence = Presence(self.shown)
        _quiet_pool_warnings()
        self.pool = ConnectionPool(
            url,
            min_size=1,
            max_size=8,
            kwargs={"autocommit": True, "connect_timeout": 5},
            timeout=5.0,  # a request waits this long for the database, then says so
            check=ConnectionPool.check_connection,
            configure=lambda conn: self.presence.back(),  # a new connection: it answers
            open=False,
            name=f"kb-ai {self.shown}",
        )
        self._migrated: set[str] = set()
        self._lock = threading.Lock()

    def open(self, kb: KnowledgeBase) -> None:
        """Connect once (failing with one line when the server does not answer), create
        the schema table, and refuse a database of another knowledge base."""
        import psycopg

        try:
            with psycopg.connect(self.url, autocommit=True, connect_timeout=5) as conn:
                for step in _SCHEMA:
                    conn.execute(step)
                mine = kb_id(kb)
                conn.execute(  # the first knowledge base to use it names it (for good)
                    "INSERT INTO kb_ai_meta (key, value) VALUES ('kb_id', %s)"
                    " ON CONFLICT (key) DO UPDATE SET value = excluded.value"
                    " WHERE kb_ai_meta.value = ''",
                    (mine,),
                )
                row = conn.execute("SELECT value FROM kb_ai_meta WHERE key = 'kb_id'").fetchone()
        except psycopg.OperationalError as exc:
            raise unreachable(self.url, exc) from exc
        except psycopg.Error as exc:  # not a connection failure: a bad URL, or no rights
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ConfigError(
                f"database_url {self.shown} cannot be used: {first}",
                hint="write postgresql://user@host:5432/dbname (a port from 1 to 65535),"
                " naming a user that may create tables in that database",
            ) from exc
        theirs = row[0] if row else ""
        if mine and theirs and theirs != mine:
            raise ConfigError(
                f"The shared database {self.shown} belongs to another knowledge base"
                f" (its id {theirs[:12]}, this one's {mine[:12]})",
                hint="give each knowledge base a database of its own (database_url)",
            )
        self.pool.open(wait=False)

    def close(self) -> None:
        self.pool.close()

    def unreachable(self, exc: BaseException, doing: str = "reach") -> DatabaseAwayError:
        """:func:`unreachable`, noted (said once, until it answers again)."""
        self.presence.gone(exc)
        return unreachable(self.url, exc, doing)

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """A pooled connection (autocommit); connection failures are StorageError."""
        errors = _connection_errors()
        try:
            with self.pool.connection() as conn:
                self.presence.back()
                yield conn
        except errors as exc:
            raise self.unreachable(exc) from exc

    def migrate(self, component: str, steps: Sequence[str]) -> int:
        """Run the steps of ``component`` not yet applied, under a lock so two processes
        do not both migrate; a version newer than ``steps`` knows is refused."""
        if component in self._migrated:
            return len(steps)
        with self.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_MIGRATE, 0))
            row = conn.execute(
                "SELECT version FROM kb_ai_schema WHERE component = %s", (component,)
            ).fetchone()
            version = row[0] if row else 0
            if version > len(steps):
                raise ConfigError(
                    f"The shared database {self.shown} was made by a newer kb-ai ({component}"
                    f" schema version {version}; this kb-ai knows {len(steps)})",
                    hint="upgrade kb-ai on this machine to the version the others run",
                )
            for step in steps[version:]:
                conn.execute(translate_ddl(step))
            conn.execute(
                "INSERT INTO kb_ai_schema (component, version) VALUES (%s, %s)"
                " ON CONFLICT (component) DO UPDATE SET version = excluded.version",
                (component, max(version, len(steps))),
            )
        self._migrated.add(component)
        return len(steps)

    def notify(self, channel: str = TASKS_CHANNEL) -> None:
        with self.connection() as conn:
            conn.execute("SELECT pg_notify(%s, '')", (channel,))

    def owner_alive(self, owner: str) -> bool:
        """Whether a live process holds ``owner``'s advisory lock (see :class:`Hold`)."""
        with self.connection() as conn:
            row = conn.execute(
                "SELECT pg_try_advisory_xact_lock(%s, %s)", (LOCK_OWNER, key_of(owner))
            ).fetchone()
        return not row[0]

    def listen(self, wake: Callable[[], None], channel: str = TASKS_CHANNEL) -> Listener:
        """Call ``wake`` on each NOTIFY on ``channel``, from a thread of its own."""
        return Listener(self.url, channel, wake, self.presence)


class PgConnection:
    """The pool as ``sqlite3.Connection`` is used by the queue: each statement on a pooled
    connection of its own, or, inside ``with conn:`` / ``BEGIN``...``COMMIT``, all on
    one connection in one transaction."""

    def __init__(self, db: SharedDatabase) -> None:
        self.db = db
        self._conn: Any = None

    @property
    def in_transaction(self) -> bool:
        return self._conn is not None

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Result:
        word = sql.strip().split(None, 1)[0].upper() if sql.strip() else ""
        if word == "BEGIN":
            self._begin()
            return Result([], 0)
        if word == "COMMIT":
            self.commit()
            return Result([], 0)
        if word == "ROLLBACK":
            self.rollback()
            return Result([], 0)
        if self._conn is not None:
            return self._guarded(lambda: _run(self._conn, sql, params))
        with self.db.connection() as conn:
            return _run(conn, sql, params)

    def executemany(self, sql: str, seq: Sequence[Sequence[Any]]) -> Result:
        owned = self._conn is None
        if owned:
            self._begin()
        try:
            for params in seq:
                self.execute(sql, params)
        except BaseException:
            if owned:
                self.rollback()
            raise
        if owned:
            self.commit()
        return Result([], 0)

    def _guarded(self, call: Callable[[], Result]) -> Result:
        try:
            return call()
        except _connection_errors() as exc:
            self._drop()
            raise self.db.unreachable(exc) from exc

    def _begin(self) -> None:
        if self._conn is not None:
            return
        try:
            conn = self.db.pool.getconn()
        except _connection_errors() as exc:
            raise self.db.unreachable(exc) from exc
        self.db.presence.back()
        self._conn = conn
        self._guarded(lambda: _run(conn, "BEGIN", ()))

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self.db.pool.putconn(conn)

    def commit(self) -> None:
        if self._conn is not None:
            self._guarded(lambda: _run(self._conn, "COMMIT", ()))
            self._drop()

    def rollback(self) -> None:
        if self._conn is not None:
            try:
                _run(self._conn, "ROLLBACK", ())
            except _connection_errors():
                pass  # the connection is gone, and the transaction with it
            self._drop()

    def close(self) -> None:
        self.rollback()

    def __enter__(self) -> PgConnection:
        self._owned = self._conn is None
        self._begin()
        return self

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> None:
        if not getattr(self, "_owned", True):
            return
        if kind is None:
            self.commit()
        else:
            self.rollback()


class Listener:
    """A thread LISTENing on a channel of its own connection, calling ``wake`` on each
    notification, reconnecting when the database goes away (waking once then, so the
    caller looks instead of waiting for a notification it may have missed)."""

    def __init__(
        self,
        url: str,
        channel: str,
        wake: Callable[[], None],
        presence: Presence | None = None,
    ) -> None:
        self.url = url
        self.channel = channel
        self.wake = wake
        self.presence = presence or Presence(shown_url(url))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kb-ai-listen", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        import psycopg

        while not self._stop.is_set():
            try:
                with psycopg.connect(self.url, autocommit=True, connect_timeout=5) as conn:
                    conn.execute(f"LISTEN {self.channel}")
                    self.presence.back()
                    self.wake()
                    while not self._stop.is_set():
                        for _ in conn.notifies(timeout=0.5):
                            self.wake()
            except psycopg.Error as exc:
                if not self._stop.is_set():
                    self.presence.gone(exc)
                self._stop.wait(1.0)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


class Hold(Held):
    """A session-level advisory lock on a connection of its own, held until released
    (or until the process dies: the server ends its session and frees the lock)."""

    def __init__(self, db: SharedDatabase, namespace: int, name: str) -> None:
        self.db = db
        self.namespace = namespace
        self.key = key_of(name)
        self._conn: Any = None
        # The connection of a try that found the lock taken, kept when the caller said it
        # will try again (``retry``): a run waiting for another writer asks every 50 ms
        # (compiler/run.py), one query each rather than a session started and ended.
        self._trying: Any = None

    def acquire(self, blocking: bool = True, *, shared: bool = False, retry: bool = False) -> bool:
        """Take the lock; ``retry``: a failed try keeps its connection for the next one
        (:meth:`release` closes it)."""
        import psycopg

        conn, self._trying = self._trying, None
        if conn is None or conn.closed:
            try:
                conn = psycopg.connect(self.db.url, autocommit=True, connect_timeout=5)
            except psycopg.OperationalError as exc:
                raise self.db.unreachable(exc, "take a lock in") from exc
        fn = "pg_advisory_lock" if blocking else "pg_try_advisory_lock"
        fn += "_shared" if shared else ""
        try:
            row = conn.execute(f"SELECT {fn}(%s, %s)", (self.namespace, self.key)).fetchone()
        except psycopg.OperationalError as exc:
            conn.close()
            raise self.db.unreachable(exc, "take a lock in") from exc
        self.db.presence.back()
        if blocking or (row and row[0] is not False):
            self._conn = conn
            return True
        if retry:
            self._trying = conn  # it holds nothing: kept for the next try
        else:
            conn.close()
        return False

    def held(self) -> bool:
        """Whether this session still holds the lock. False once its connection dropped
        (a database restart, ``pg_terminate_backend``): the server freed the lock with
        the session, and another process may have taken it since."""
        import psycopg

        conn = self._conn
        if conn is None:
            return False
        try:
            row = conn.execute(
                "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory'"
                " AND pid = pg_backend_pid() AND granted AND objsubid = 2"
                " AND classid::bigint = %s AND objid::bigint = %s)",
                (self.namespace, self.key & 0xFFFFFFFF),  # oids: the key's unsigned bits
            ).fetchone()
        except psycopg.Error:
            return False
        return bool(row and row[0])

    def retake(self) -> bool:
        """Take the lock again on a new connection after :meth:`held` said it was lost,
        if no one else holds it now; whether this process holds it after the call."""
        if self.held():
            return True
        self.release()
        return self.acquire(blocking=False)

    def release(self) -> None:
        """Let go of the lock (if held) and of a kept trying connection. The lock is
        freed before this returns: closing the connection alone ends the session, but
        the server frees its locks only as that backend exits, after the close has
        returned, so a try by another process just after (a waiting writer asks every
        50 ms) could still find it taken."""
        import psycopg

        if self._conn is not None and not self._conn.closed:
            # (a connection that is gone took the session's locks with it)
            with contextlib.suppress(psycopg.Error):
                self._conn.execute("SELECT pg_advisory_unlock_all()")
        for conn in (self._conn, self._trying):
            if conn is not None:
                conn.close()  # the session ends: any lock left is freed with it
        self._conn = self._trying = None


_databases: dict[str, SharedDatabase] = {}
_toml_urls: dict[Path, str | None] = {}  # kb root -> its kb-ai.toml's database_url


def shared_database(kb: KnowledgeBase) -> SharedDatabase | None:
    """The shared database of ``kb`` (opened and checked once per process), or None when
    no ``database_url`` is set. Raises ConfigError for a URL that is not PostgreSQL or a
    database of another knowledge base, StorageError when it does not answer."""
    url = database_url(kb)
    if url is None:
        return None
    check_url(url)
    with _opening:
        db = _databases.get(url)
        if db is None:
            try:
                import psycopg_pool  # noqa: F401
            except ImportError as exc:
                raise ConfigError(
                    "database_url is set but psycopg is not installed",
                    hint="pip install 'kb-ai[postgres]'",
                ) from exc
            db = SharedDatabase(url)
            db.open(kb)
            _databases[url] = db
    return db


def shared_of_state(conn: Any) -> SharedDatabase | None:
    """The shared database of the knowledge base whose state.db ``conn`` is open on (for
    stores that are handed only that connection), or None."""
    from wiki.layout import KnowledgeBase

    path = getattr(conn, "path", "")
    if not path:
        return None
    return shared_database(KnowledgeBase(Path(path).resolve().parent.parent))


def store_connection(
    state: Any,
    component: str,
    migrations: Sequence[str],
    shared_migrations: Sequence[str] | None = None,
    *,
    kb: KnowledgeBase | None = None,
) -> Any:
    """The connection a store of ``component`` keeps its tables on, migrated: with a
    shared database (of ``kb``, else of the state.db ``state`` is open on) a
    :class:`PgConnection` to it (``shared_migrations``, or the same ``migrations``),
    else ``state`` itself. The store then keeps one text of its SQL for both."""
    shared = shared_database(kb) if kb is not None else shared_of_state(state)
    if shared is not None:
        shared.migrate(component, migrations if shared_migrations is None else shared_migrations)
        return PgConnection(shared)
    apply_migrations(state, component, tuple(migrations))
    return state


def shared_connect(
    kb: KnowledgeBase, component: str, migrations: Sequence[str]
) -> Callable[[], PgConnection] | None:
    """For a store below wiki/ that is handed a connection factory (the model call log
    and response cache, kb_ai/llm/store.py): one giving a :class:`PgConnection` to the
    shared database of ``kb``, migrated (``component``) at its first use, so a database
    away then fails that use, not the caller; None without a shared database."""
    db = shared_database(kb)
    if db is None:
        return None

    def connect() -> PgConnection:
        db.migrate(component, migrations)
        return PgConnection(db)

    return connect


def forget_databases() -> None:
    """Close every pool this process opened, and forget the URLs read (tests; a process
    that is ending)."""
    with _opening:
        for db in _databases.values():
            db.close()
        _databases.clear()
        _toml_urls.clear()
