"""The call log and the response cache, in the knowledge base's SQLite state.db.

Every call is logged (``llm_calls``); a reply is cached (``llm_cache``) under a hash of
everything that shapes it once its caller accepted it (:class:`CacheReceipt`), so an
identical request is never paid for twice, and a reply the caller refused is never
replayed. Without a database path nothing is logged and the cache lives in memory for
the client's lifetime.

The seam for a shared database: ``connect``, a callable giving a connection that speaks
sqlite3's face (``?`` placeholders, ``with conn:`` transactions) to a database holding
the tables of :data:`SHARED_MIGRATIONS` (migrated by the layer that owns that database;
this package knows none: wiki/database.py's ``PgConnection`` is one). The same SQL runs
on both.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from kb_ai.errors import StorageError, storage_error
from kb_ai.llm._transport import RawReply

log = logging.getLogger(__name__)

#: Up to this many cached keys are held in memory to answer misses without SQLite
#: (reading 50,000 takes ~50 ms, in a thread of its own).
KNOWN_KEYS_MAX = 50_000
#: ... once this many lookups went to SQLite (a question makes 2-4 calls, a compile more).
KNOWN_KEYS_AFTER = 5
#: A cache of at most this many keys has them read as the store connects.
KNOWN_KEYS_AT_ONCE = 2_000

SCHEMA = """
CREATE TABLE IF NOT EXISTS llm_calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ts REAL NOT NULL,
    stage TEXT NOT NULL,
    model TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    duration_s REAL NOT NULL DEFAULT 0,
    cached INTEGER NOT NULL DEFAULT 0,
    ok INTEGER NOT NULL,
    error TEXT
);
CREATE TABLE IF NOT EXISTS llm_cache (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    finish_reason TEXT,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS llm_unlogged (
    id INTEGER PRIMARY KEY,
    ts REAL NOT NULL,
    calls INTEGER NOT NULL,
    error TEXT
);
"""
#: The same tables as versioned steps, for a shared database (PostgreSQL: its REAL is
#: single precision, so times and costs are double; ``id INTEGER PRIMARY KEY`` becomes
#: an identity there). Append new steps; never edit these.
SHARED_MIGRATIONS = (
    """CREATE TABLE llm_calls (
        id INTEGER PRIMARY KEY,
        ts DOUBLE PRECISION NOT NULL,
        stage TEXT NOT NULL,
        model TEXT NOT NULL,
        prompt_tokens INTEGER NOT NULL DEFAULT 0,
        completion_tokens INTEGER NOT NULL DEFAULT 0,
        cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
        duration_s DOUBLE PRECISION NOT NULL DEFAULT 0,
        cached INTEGER NOT NULL DEFAULT 0,
        ok INTEGER NOT NULL,
        error TEXT
    )""",
    """CREATE TABLE llm_cache (
        key TEXT PRIMARY KEY,
        text TEXT NOT NULL,
        finish_reason TEXT,
        prompt_tokens INTEGER NOT NULL DEFAULT 0,
        completion_tokens INTEGER NOT NULL DEFAULT 0,
        created DOUBLE PRECISION NOT NULL
    )""",
)
#: A shared database that failed is not asked again for this long: meanwhile lookups
#: miss and writes fail at once (each ask would wait the pool's 5 s, on every call).
AWAY_PAUSE_S = 10.0
#: A connection factory for a shared database (see the module's docstring).
Connect = Callable[[], Any]


@dataclass(frozen=True)
class CachedReply:
    text: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int

    @classmethod
    def of(cls, raw: RawReply) -> CachedReply:
        return cls(raw.text, raw.finish_reason, raw.prompt_tokens, raw.completion_tokens)


@dataclass(frozen=True)
class CallRecord:
    stage: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    duration_s: float = 0.0
    cached: bool = False
    ok: bool = True
    error: str | None = None


def cache_key(
    model: str,
    api_base: str | None,
    messages: list[dict],
    schema: dict | None,
    mode: str | None,
    max_tokens: int | None,
) -> str:
    """sha256 over everything that shapes a reply."""
    blob = json.dumps(
        [model, api_base, messages, schema, mode, max_tokens],
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _connect(db_path: Path) -> sqlite3.Connection:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    # A new file only where no deleted one left its WAL or shared memory: SQLite would
    # take them for the new file's, and resetting that shared memory while this
    # process's other connections have it mapped kills the process (SIGBUS). A state.db
    # deleted under a server is made again by wiki/state.py, which removes them first;
    # until then the calls are made, unlogged (see record).
    left = [db_path.with_name(db_path.name + s) for s in ("-wal", "-shm")]
    create = not any(p.exists() for p in left)
    uri = f"file:{quote(str(db_path.absolute()))}?mode={'rwc' if create else 'rw'}"
    with _translated(db_path, "open"):
        conn = sqlite3.connect(uri, uri=True, timeout=30, check_same_thread=False)
        try:
            conn.execute("PRAGMA mmap_size=0")  # (SQLite's default; a build may differ)
            conn.execute("PRAGMA journal_mode=WAL")
            # A lost log row or cache entry after a power cut costs a model call, not
            # data: skip the fsync per commit, which cost ~6 ms per call on the loop.
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(SCHEMA)
        except BaseException:
            conn.close()
            raise
    return conn


@contextmanager
def _translated(db_path: Path, doing: str) -> Iterator[None]:
    """SQLite's storage failures (a full disk, a corrupted file) as StorageError."""
    try:
        yield
    except sqlite3.Error as exc:
        raise (storage_error(exc, db_path, doing) or exc) from exc


class CallStore:
    """Log and cache over one state.db, or a shared database (``connect``), or memory
    (neither given).

    Keeps one connection for the client's life: opening and closing one per call cost
    ~12 ms on the event loop and capped a compile at 16 calls in flight to a fifth of
    its ideal speed. WAL lets other processes (the web app, a CLI run) share the file.

    The client uses the async side (:meth:`lookup`, :meth:`record`, :meth:`aclose`):
    the connection then lives in a thread of its own, so the event loop never waits on
    SQLite (three statements a call, each a GIL hand-off, cost ~1 ms of the loop's time
    per call with 16 in flight). Records are written in order, soon after the call; a
    failed write is logged, never turned into a failed model call.

    Misses cost no trip to that thread once a client has made a few calls: another
    thread then reads the set of cached keys (up to ``KNOWN_KEYS_MAX``), and from then on
    a key neither in it nor cached since is answered at once. (With 16 calls starting
    together the trips queued behind each other and behind the event loop for the GIL:
    the last waited ~14 ms.) A reply cached meanwhile by another process is not seen by
    this client; it pays for that call.

    ``connect``: the log and cache live in a shared database instead (see the module's
    docstring); every lookup then asks it, since other servers cache replies meanwhile.
    """

    def __init__(self, db_path: Path | None, *, connect: Connect | None = None) -> None:
        self.db_path = db_path
        self.shared = connect is not None
        self._open: Connect | None = connect
        if connect is None and db_path is not None:
            self._open = lambda: _connect(db_path)
        self._memory: dict[str, CachedReply] = {}
        self._connection: Any = None
        self._thread: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        # Writes in the order made: a call record, a reply to cache, a key to forget.
        self._pending: list[CallRecord | tuple[str, CachedReply] | str] = []
        self._flush_queued = False
        self._known: set[str] | None = None  # keys in llm_cache when _load_known read them
        self._recorded: set[str] = set()  # keys this store cached since
        self._refused: set[str] = set()  # keys this store removed since (never replayed)
        self._away: tuple[float, StorageError] | None = None  # the shared database failed
        self._lookups = 0
        if self._open is not None:  # connect while the caller prepares its first call
            # (a failure here is said by the first use, which meets it again)
            self._submit(self._conn_and_glance).add_done_callback(_note_failure)

    def _conn_and_glance(self) -> None:
        """Connect; a small cache's keys are read at once (a new knowledge base's is
        empty): its first lookups then cost no trip to this thread either."""
        conn = self._conn()
        if self.shared:  # (other servers cache replies meanwhile: every lookup asks)
            return
        try:
            keys = _cached_keys(conn, KNOWN_KEYS_AT_ONCE)
        except sqlite3.Error:
            return  # (the lookups ask, and say what fails)
        if keys is not None and self._known is None:
            self._known = keys  # (what this store caches from now on: self._recorded)

    def _load_known(self) -> None:
        assert self._open is not None
        try:
            with closing(self._open()) as conn:
                self._known = _cached_keys(conn, KNOWN_KEYS_MAX)
        except (sqlite3.Error, StorageError) as exc:
            log.warning("could not read the response cache's keys: %s", exc)

    def _submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        if self._thread is None:
            self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kb-ai-store")
        return self._thread.submit(fn, *args)

    async def lookup(self, key: str) -> CachedReply | None:
        """The cached reply for ``key``, read off the event loop."""
        if self._open is None:
            return self._memory.get(key)
        if key in self._refused:  # (its removal may not be written yet: the database away)
            return None
        known = self._known
        if known is not None and key not in known and key not in self._recorded:
            return None
        self._lookups += 1
        if self._lookups == KNOWN_KEYS_AFTER and not self.shared and self._known is None:
            # Many calls coming (a compile): read the keys on a connection of their own,
            # while lookups go on through the store's thread. A question's few calls
            # never pay for it.
            threading.Thread(target=self._load_known, name="kb-ai-store-keys", daemon=True).start()
        try:
            return await asyncio.wrap_future(self._submit(self.get, key))
        except StorageError as exc:  # the cache saves calls; without it the call is made
            log.warning("could not read the response cache: %s", exc)
            return None

    def record(self, call: CallRecord, cache: tuple[str, CachedReply] | None = None) -> None:
        """Log ``call`` (and cache a reply) in the store's thread; returns at once.

        Records made while the thread is busy are written together, in one transaction."""
        if cache is not None:
            self.keep(*cache)
        self._write(call)

    def keep(self, key: str, reply: CachedReply) -> None:
        """Cache ``reply`` under ``key``, in the store's thread; returns at once."""
        if self._open is None:
            self._memory[key] = reply
            return
        self._recorded.add(key)
        self._refused.discard(key)
        self._write((key, reply))

    def forget(self, key: str) -> None:
        """Remove ``key`` from the cache, in the store's thread; returns at once."""
        if self._open is None:
            self._memory.pop(key, None)
            return
        self._recorded.discard(key)
        self._refused.add(key)
        self._write(key)

    def _write(self, item: CallRecord | tuple[str, CachedReply] | str) -> None:
        if self._open is None:
            return
        with self._lock:
            self._pending.append(item)
            if self._flush_queued:
                return
            self._flush_queued = True
        self._submit(self._flush).add_done_callback(_report_failure)

    def _flush(self) -> None:
        # Queued before any lookup submitted after the record: a lookup sees every put.
        with self._lock:
            batch, self._pending = self._pending, []
            self._flush_queued = False
        if not batch:
            return
        try:
            with self._using("write to") as conn, conn:
                for item in batch:
                    if isinstance(item, CallRecord):
                        self._insert_call(conn, item)
                    elif isinstance(item, str):
                        conn.execute("DELETE FROM llm_cache WHERE key = ?", (item,))
                    else:
                        self._insert_cache(conn, *item)
        except StorageError as exc:
            self._kept_back(batch, exc)
            raise

    def _kept_back(self, batch: list[Any], exc: StorageError) -> None:
        """A write failed: a refused reply's removal waits for the next write (lookups
        meanwhile refuse it here), and, in a shared database, the calls that went
        unlogged are counted in state.db, so Status says its totals miss them."""
        forgets = [item for item in batch if isinstance(item, str)]
        with self._lock:
            self._pending[:0] = [k for k in forgets if k not in self._pending]
        calls = sum(isinstance(item, CallRecord) for item in batch)
        if not (self.shared and calls and self.db_path is not None):
            return
        try:
            with closing(_connect(self.db_path)) as local, local:
                local.execute(
                    "INSERT INTO llm_unlogged (ts, calls, error) VALUES (?, ?, ?)",
                    (time.time(), calls, str(exc)[:500]),
                )
        except (sqlite3.Error, StorageError) as note:
            log.warning("could not note the model calls left out of the log: %s", note)

    async def aclose(self) -> None:
        """Write what is pending, then close (the store opens again if used again)."""
        thread, self._thread = self._thread, None
        if thread is not None:
            await asyncio.wrap_future(thread.submit(self.close))
            thread.shutdown(wait=False)
        else:
            self.close()

    def _conn(self) -> Any:
        assert self._open is not None
        if self._connection is None:
            self._connection = self._open()
        return self._connection

    @contextmanager
    def _using(self, doing: str) -> Iterator[Any]:
        """The connection, its storage failures raised as StorageError (a shared
        database's connection raises them itself); after one it is dropped, so the next
        use opens the file again (it may have been replaced)."""
        assert self._open is not None
        if self._away is not None:
            if time.monotonic() < self._away[0]:
                raise self._away[1]
            self._away = None
        try:
            with _translated(self.db_path or Path("state.db"), doing):
                yield self._conn()
        except StorageError as exc:
            if self.shared:
                self._away = (time.monotonic() + AWAY_PAUSE_S, exc)
            if self._connection is not None:
                with contextlib.suppress(Exception):  # it is broken already
                    self._connection.close()
                self._connection = None
            raise

    def close(self) -> None:
        if self._pending:
            try:
                self._flush()
            except StorageError as exc:  # as in the store's thread: logged, never raised
                log.warning("could not write the model call log or cache: %s", exc)
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def get(self, key: str) -> CachedReply | None:
        if self._open is None:
            return self._memory.get(key)
        with self._using("read") as conn:
            row = conn.execute(
                "SELECT text, finish_reason, prompt_tokens, completion_tokens "
                "FROM llm_cache WHERE key = ?",
                (key,),
            ).fetchone()
        return CachedReply(*row) if row else None

    def put(self, key: str, reply: CachedReply) -> None:
        if self._open is None:
            self._memory[key] = reply
            return
        with self._using("write to") as conn, conn:
            self._insert_cache(conn, key, reply)

    def log(self, record: CallRecord) -> None:
        if self._open is None:
            return
        with self._using("write to") as conn, conn:
            self._insert_call(conn, record)

    @staticmethod
    def _insert_cache(conn: Any, key: str, reply: CachedReply) -> None:
        conn.execute(
            "INSERT INTO llm_cache (key, text, finish_reason, prompt_tokens, "
            "completion_tokens, created) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE"
            " SET text = excluded.text, finish_reason = excluded.finish_reason,"
            " prompt_tokens = excluded.prompt_tokens,"
            " completion_tokens = excluded.completion_tokens, created = excluded.created",
            (
                key,
                reply.text,
                reply.finish_reason,
                reply.prompt_tokens,
                reply.completion_tokens,
                time.time(),
            ),
        )

    @staticmethod
    def _insert_call(conn: Any, record: CallRecord) -> None:
        conn.execute(
            "INSERT INTO llm_calls (ts, stage, model, prompt_tokens, completion_tokens, "
            "cost_usd, duration_s, cached, ok, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                time.time(),
                record.stage,
                record.model,
                record.prompt_tokens,
                record.completion_tokens,
                record.cost_usd,
                record.duration_s,
                int(record.cached),
                int(record.ok),
                record.error,
            ),
        )


class CacheReceipt:
    """The caller's verdict on one reply (see :meth:`kb_ai.llm.Completion.accept`).

    A fresh reply is cached on :meth:`accept` (once). :meth:`reject` removes the reply
    from the cache, whether it came from there or was accepted earlier (a later check
    failed); after a rejection, accepting does nothing."""

    __slots__ = ("_store", "_key", "_reply", "verdict")

    def __init__(self, store: CallStore, key: str, reply: CachedReply | None) -> None:
        self._store = store
        self._key = key
        self._reply = reply  # None: it came from the cache
        self.verdict: str | None = None

    def accept(self) -> None:
        if self.verdict is None:
            self.verdict = "accepted"
            if self._reply is not None:
                self._store.keep(self._key, self._reply)

    def reject(self) -> None:
        if self.verdict == "rejected":
            return
        cached = self._reply is None or self.verdict == "accepted"
        self.verdict = "rejected"
        if cached:
            self._store.forget(self._key)


def _note_failure(future: Future) -> None:
    if future.exception() is not None:
        log.debug("could not open the model call log: %s", future.exception())


def _report_failure(future: Future) -> None:
    if future.exception() is not None:
        log.warning("could not write the model call log or cache: %s", future.exception())


_TOTALS = (
    "SELECT COALESCE(SUM(CASE WHEN cached = 0 THEN 1 ELSE 0 END), 0),"
    " COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0),"
    " COALESCE(SUM(cost_usd), 0.0), COALESCE(SUM(CASE WHEN cached = 1 THEN 1 ELSE 0 END), 0),"
    " COALESCE(SUM(CASE WHEN ok = 0 THEN 1 ELSE 0 END), 0) FROM llm_calls"
)


def no_usage() -> dict[str, Any]:
    """The totals of :func:`usage_totals` before any call."""
    return {
        "calls": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cost_usd": 0.0,
        "cached_calls": 0,
        "failed_calls": 0,
    }


def usage_totals(db_path: Path, *, connect: Connect | None = None) -> dict[str, Any]:
    """What the model calls logged in state.db (or, ``connect``, in the shared database:
    every server's calls) added up to, for ``kb-ai status``.

    Cached calls are counted apart and cost nothing; failed calls count as calls. With a
    shared database, ``unlogged`` (when there were any): the calls this server made while
    the database was away, which the totals miss (how many, since when, the last error).
    """
    totals = no_usage()
    if connect is not None:
        with closing(connect()) as conn:
            row = conn.execute(_TOTALS).fetchone()
    elif not Path(db_path).is_file():
        return totals
    else:
        with closing(_connect(Path(db_path))) as conn, _translated(Path(db_path), "read"):
            row = conn.execute(_TOTALS).fetchone()
    keys = list(totals)
    totals = {k: (float(v) if k == "cost_usd" else int(v)) for k, v in zip(keys, row, strict=True)}
    if connect is not None:
        unlogged = unlogged_calls(Path(db_path))
        if unlogged is not None:
            totals["unlogged"] = unlogged
    return totals


def unlogged_calls(db_path: Path) -> dict[str, Any] | None:
    """The calls made here while the shared database was away, left out of its log
    (noted in this server's state.db): how many, since when, the last error; or None."""
    if not db_path.is_file():
        return None
    with closing(_connect(db_path)) as conn, _translated(db_path, "read"):
        row = conn.execute(
            "SELECT SUM(calls), MIN(ts), (SELECT error FROM llm_unlogged ORDER BY id DESC LIMIT 1)"
            " FROM llm_unlogged"
        ).fetchone()
    if not row or not row[0]:
        return None
    since = datetime.fromtimestamp(row[1], UTC).isoformat(timespec="seconds")
    return {"calls": int(row[0]), "since": since, "error": row[2] or ""}


def _cached_keys(conn: Any, limit: int) -> set[str] | None:
    """The keys of the response cache, or None when it holds more than ``limit``."""
    rows = conn.execute("SELECT key FROM llm_cache LIMIT ?", (limit + 1,))
    keys = {row[0] for row in rows}
    return keys if len(keys) <= limit else None
