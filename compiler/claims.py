"""One extraction of a text at a time across every worker sharing a database.

Two runs may be given the same document at once: two servers compiling one folder, or
two uploads of one text. Each extracts before it takes the compile lock (compiler/
ahead.py), so both would send the same requests to the model, and pay twice. With a
shared database (``database_url``) a run first claims the text it sends (its checksum,
with the model, prompt version and categories: what the requests are made of):

- ahead of the lock, a text another run has claimed is not sent: the run leaves it to
  its turn under the lock, when what the other run compiled is found (its stored
  extraction, or its replies in the shared response cache);
- under the lock, the run waits for the other's claim to end, then extracts, its
  requests answered from the response cache the other filled.

A claim is renewed while its run lives and expires ``CLAIM_SECONDS`` after its last
renewal, so a run killed mid-extraction holds no one up for longer. Without a shared
database there are no claims (one machine: the runs take turns at the lock file).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import socket
import uuid
from collections.abc import Callable

from compiler._tasks import run_io
from compiler.mode import ComposedArticles
from compiler.sources import Source
from kb_ai.errors import StorageError
from wiki import KnowledgeBase
from wiki.database import SharedDatabase, shared_database

log = logging.getLogger(__name__)

#: A claim not renewed for this long is free again (its run died).
CLAIM_SECONDS = 30.0
#: How often a run waiting for another's claim looks again.
CLAIM_POLL_SECONDS = 0.25
MIGRATIONS = (
    "CREATE TABLE extract_claims (key TEXT PRIMARY KEY, owner TEXT NOT NULL,"
    " expires TIMESTAMPTZ NOT NULL)",
)


def claim_key(source: Source, model: str, mode: ComposedArticles) -> str:
    """What an extraction's requests are made of: the text, the model, the prompts."""
    parts = [source.checksum, model, str(mode.version), *mode.categories]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


class ExtractionClaims:
    """The claims of one run (see the module's docstring)."""

    def __init__(self, db: SharedDatabase) -> None:
        self.db = db
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self.held: set[str] = set()
        self._renewing: asyncio.Task | None = None

    @classmethod
    def of(cls, kb: KnowledgeBase) -> ExtractionClaims | None:
        """The claims of a run on ``kb``; None without a shared database."""
        db = shared_database(kb)
        if db is None:
            return None
        db.migrate("claims", MIGRATIONS)
        return cls(db)

    async def take(self, key: str, *, wait: bool, stopped: Callable[[], bool] = bool) -> bool:
        """Claim ``key``; ``wait``: until the run holding it lets go or dies (or this run
        is ``stopped``). Whether this run may extract it now: without ``wait``, False
        when another holds it. The database away: True (the claim only saves calls)."""
        while True:
            try:
                mine = await run_io(self._try, key)
            except StorageError as exc:  # said once by the database (wiki/database.py)
                log.debug("extraction claim not taken: %s", exc)
                return True
            if mine:
                self.held.add(key)
                if self._renewing is None:
                    self._renewing = asyncio.ensure_future(self._renew())
                return True
            if not wait or stopped():
                return False
            await asyncio.sleep(CLAIM_POLL_SECONDS)

    async def drop(self, key: str) -> None:
        """The extraction of ``key`` is done (or failed): others may go on."""
        if key not in self.held:
            return
        self.held.discard(key)
        try:
            await run_io(self._delete, key)
        except StorageError as exc:  # it expires by itself
            log.debug("extraction claim not dropped: %s", exc)

    async def close(self) -> None:
        """Drop every claim still held and stop renewing."""
        for key in list(self.held):
            await self.drop(key)
        if self._renewing is not None:
            self._renewing.cancel()
            await asyncio.gather(self._renewing, return_exceptions=True)
            self._renewing = None

    def _try(self, key: str) -> bool:
        with self.db.connection() as conn:
            row = conn.execute(
                "INSERT INTO extract_claims (key, owner, expires)"
                " VALUES (%s, %s, now() + make_interval(secs => %s))"
                " ON CONFLICT (key) DO UPDATE SET owner = excluded.owner,"
                " expires = excluded.expires"
                " WHERE extract_claims.expires < now() OR extract_claims.owner = excluded.owner"
                " RETURNING owner",
                (key, self.owner, CLAIM_SECONDS),
            ).fetchone()
        return row is not None

    def _delete(self, key: str) -> None:
        with self.db.connection() as conn:
            conn.execute(
                "DELETE FROM extract_claims WHERE key = %s AND owner = %s", (key, self.owner)
            )

    def _extend(self, keys: list[str]) -> None:
        with self.db.connection() as conn:
            conn.execute(
                "UPDATE extract_claims SET expires = now() + make_interval(secs => %s)"
                " WHERE owner = %s AND key = ANY(%s)",
                (CLAIM_SECONDS, self.owner, keys),
            )

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(CLAIM_SECONDS / 3)
            if not self.held:
                continue
            try:
                await run_io(self._extend, sorted(self.held))
            except StorageError as exc:  # the next round tries again
                log.debug("extraction claims not renewed: %s", exc)
