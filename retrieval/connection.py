"""The one connection to the wiki's state.db that the disk work of a question shares.

A question looks its candidates up in the search index and the catalog lines once a
hop, each time from a worker thread (asyncio.to_thread: `kb-ai serve` answers every
user on one event loop). Opening state.db for each look-up cost about a millisecond
(journal mode, migrations), the search index was checked against the catalog before
every search, and a new SearchIndex forgot the counts of the question's words that its
plan takes (wiki/search.py keeps them while the database is unchanged, and takes them
again once anything commits). So a question opens one connection at its first need,
worker threads use it in turn (a lock: never two at once), and it is closed when the
question ends; the next question opens a new one and sees every change since. The hits
of a search are not kept: a question rarely runs the same query twice (127 searches,
127 different queries over 21 questions of bench/ask/hops_time.py).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from wiki import KnowledgeBase, open_state
from wiki.indexing import follow_commits, index_is_current, refresh_search_index
from wiki.search import SearchIndex

__all__ = ["SharedConnection"]


class SharedConnection:
    """state.db for one question at a time, opened on first use."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._index: SearchIndex | None = None
        self._closing = False
        self._depth = 0  # use blocks open, in the thread holding the lock

    @contextmanager
    def use(self) -> Iterator[sqlite3.Connection]:
        """The connection, for one thread until the block ends."""
        with self._lock:
            if self._conn is None:
                self._conn = open_state(self.kb, any_thread=True)
            self._depth += 1
            try:
                yield self._conn
            finally:
                self._depth -= 1
        if self._closing and not self._depth:  # close() was called meanwhile: close now
            self.close()

    def search_index(self, articles: int) -> SearchIndex:
        """The search index (inside ``use``), brought up to date once per connection
        when it does not hold the catalog's ``articles`` (an index built before it
        existed, or articles added or deleted by hand), and following the commits made
        since it last looked (an edit committed with git, wiki.indexing.follow_commits)."""
        with self.use() as conn:
            if self._index is None:
                if not index_is_current(conn, articles):
                    refresh_search_index(self.kb, conn)
                follow_commits(self.kb, conn)  # an edit committed outside kb-ai
                self._index = SearchIndex(conn)
            return self._index

    def close(self) -> None:
        """Close the connection, at once or, when a worker thread is using it (a
        question cancelled mid-search), as soon as that thread is done with it."""
        self._closing = True
        if not self._lock.acquire(blocking=False):
            return  # the thread in ``use`` closes it on its way out
        try:
            if self._depth:  # inside a use block of this very thread: at its end
                return
            if self._conn is not None:
                self._conn.close()
            self._conn, self._index, self._closing = None, None, False
        finally:
            self._lock.release()
