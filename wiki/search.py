"""Lexical search over the wiki's articles: the shortlist behind page selection.

When the catalog is larger than the selection prompt's budget, the model cannot read
every catalog line, so a lexical search picks the candidates it chooses from. The
search reads titles, keys, summaries, tags and whole bodies, so a fact that sits only
deep in an article can still be reached.

The index is an SQLite FTS5 table of all fields (porter stemming over unicode61), a
second one of the head fields only (title, keys, summary, tags) whose score is added so
a long body does not drown its own title, and a table of path -> content hash, so
re-indexing an unchanged article does nothing.

What goes into a column and what a question searches for are cut by one tokenizer
(wiki/words.py): accents and unsplittable letters folded, words with symbols (C++, AT&T)
and letters glued to digits (GPT4) given extra forms, Chinese, Japanese and Korean runs
cut into overlapping bigrams plus single characters, traditional Chinese simplified.

A question is turned into an OR of quoted terms, stop words dropped; each word is also
searched as a prefix of its crude stem ("deploys" -> deplo*), which reaches forms that
porter stems apart (deploys -> deploi, deployment -> deploy). A single CJK character is
searched only where its bigrams are in no article. On a large index a query
scores a bounded number of rows whatever the wiki's size: the rarest terms are OR'ed,
the commoner ones must occur together, and when every term is common the heads decide
(see ``SearchIndex._plan``).

This module imports nothing of kb-ai but its errors, kb_ai/lexicon.py and wiki.words.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from kb_ai.errors import KbAiError
from kb_ai.lexicon import CHANGED_SUFFIX, COLUMNS, HEAD_COLUMNS, TOKENIZER, quote, ranked_sql
from wiki.words import index_text, query_terms

__all__ = ["SearchDoc", "SearchHit", "SearchIndex"]

# Bump when what goes into the index changes (columns, tokenizer, segmentation):
# the tables are then rebuilt empty and the next sync fills them again.
_SCHEMA_VERSION = "3"

# the bm25 column weights (title, keys, summary, tags, body; and the heads') and the
# query that ranks by them: kb_ai/lexicon.py, shared with the prompt hook

# Rows a query may score on a large index: scoring costs a few microseconds a row (bm25
# in two tables), so this keeps a search near 10-20 ms whatever the wiki's size.
_ROW_BUDGET = 5_000


@dataclass(frozen=True)
class SearchDoc:
    """One article as the index sees it."""

    path: str
    title: str
    summary: str
    keys: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    body: str = ""


@dataclass(frozen=True)
class SearchHit:
    """A found article. ``score`` is higher for a better match, comparable within one search."""

    path: str
    score: float


class SearchIndex:
    """The full-text index of a wiki's articles, kept in an SQLite database.

    Writes run in one transaction each: committed when the connection was idle, a
    savepoint inside the caller's transaction otherwise.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._owns_conn = False
        # Row counts of terms (and of the index) already taken, while the database is as
        # it was then: one question's hops search its words again and again, and each
        # count costs a query (see ``_counted``).
        self._counts: dict[tuple[str, tuple[str | int, ...]], int] = {}
        self._counted_at: tuple[int, int] | None = None
        self._stamp: str | None = None  # see _mark_changed
        with _transaction(conn):
            _ensure_schema(conn)

    @classmethod
    def open(cls, db_path: str | os.PathLike[str]) -> SearchIndex:
        """Open (creating if needed) the index in the database at ``db_path``."""
        index = cls(sqlite3.connect(db_path))
        index._owns_conn = True
        return index

    def close(self) -> None:
        """Close the connection if this index opened it; a passed-in one is the caller's."""
        if self._owns_conn:
            self._conn.close()

    def upsert(self, docs: Iterable[SearchDoc]) -> int:
        """Index the given articles; return how many were new or changed."""
        conn = self._conn
        changed = 0
        with _transaction(conn):
            known = dict(conn.execute("SELECT path, hash FROM search_docs"))
            for doc in docs:
                digest = content_hash(doc)
                if known.get(doc.path) == digest:
                    continue
                if doc.path in known:
                    (doc_id,) = conn.execute(
                        "SELECT id FROM search_docs WHERE path = ?", (doc.path,)
                    ).fetchone()
                    _delete_row(conn, doc_id)
                    conn.execute("UPDATE search_docs SET hash = ? WHERE id = ?", (digest, doc_id))
                else:
                    doc_id = conn.execute(
                        "INSERT INTO search_docs (path, hash) VALUES (?, ?)", (doc.path, digest)
                    ).lastrowid
                fields = _index_fields(doc)
                conn.execute(
                    "INSERT INTO search_fts (rowid, title, keys, summary, tags, body)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    (doc_id, *fields),
                )
                conn.execute(
                    "INSERT INTO search_head (rowid, title, keys, summary, tags)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (doc_id, *fields[:-1]),
                )
                known[doc.path] = digest
                changed += 1
        if changed:
            self._mark_changed()
        return changed

    def remove(self, paths: Iterable[str]) -> None:
        """Drop the given articles from the index; unknown paths are ignored."""
        conn = self._conn
        with _transaction(conn):
            for path in paths:
                row = conn.execute("SELECT id FROM search_docs WHERE path = ?", (path,)).fetchone()
                if row is None:
                    continue
                _delete_row(conn, row[0])
                conn.execute("DELETE FROM search_docs WHERE id = ?", row)
                self._mark_changed()

    def sync(self, docs: Iterable[SearchDoc]) -> None:
        """Make the index hold exactly the given articles."""
        docs = list(docs)
        with _transaction(self._conn):
            self.upsert(docs)
            wanted = {doc.path for doc in docs}
            indexed = [path for (path,) in self._conn.execute("SELECT path FROM search_docs")]
            self.remove(path for path in indexed if path not in wanted)

    def _mark_changed(self) -> None:
        """Touch the file beside the database that says its search index changed
        (``state.db-search``): the agents' prompt hint (kb_ai/hooks/hintfile.py) is
        stale once it is newer than the hint file. An in-memory database has none."""
        if self._stamp is None:
            rows = self._conn.execute("PRAGMA database_list").fetchall()
            self._stamp = next(
                (f"{f}{CHANGED_SUFFIX}" for _, n, f in rows if n == "main" and f), ""
            )
        if self._stamp:
            try:  # the hint is then only as fresh as the master index says
                with open(self._stamp, "a"):
                    os.utime(self._stamp)
            except OSError:
                return

    def stale_hashes(self, wanted: dict[str, str]) -> list[str]:
        """The paths where the index differs from ``wanted`` (path -> :func:`content_hash`)."""
        known = dict(self._conn.execute("SELECT path, hash FROM search_docs"))
        stale = [path for path, digest in wanted.items() if known.get(path) != digest]
        return sorted(stale + [path for path in known if path not in wanted])

    def count(self) -> int:
        """Number of indexed articles."""
        self._fresh_counts()
        return self._counted("SELECT count(*) FROM search_docs", ())

    def search(self, query: str, limit: int = 50) -> list[SearchHit]:
        """The articles that best match ``query``, best first; [] when nothing can match.

        Any text is a valid query: it is cut into terms here and each term is quoted,
        so FTS5 operators and punctuation in a question are plain text.
        """
        self._fresh_counts()
        clauses = self._query_clauses(query)
        if not clauses or limit <= 0:
            return []
        expression, whole = self._plan(clauses)
        rows = self._conn.execute(
            ranked_sql(whole=whole), {"q": expression, "limit": limit}
        ).fetchall()
        return [SearchHit(path, -score) for path, score in rows]

    def stored_text(self, path: str) -> str:
        """The title and body of an indexed article as the index holds them (folded; CJK
        cut into bigrams); "" for a path not indexed."""
        row = self._conn.execute(
            "SELECT f.title, f.body FROM search_docs AS d JOIN search_fts AS f"
            " ON f.rowid = d.id WHERE d.path = ?",
            (path,),
        ).fetchone()
        return "" if row is None else f"{row[0]}\n{row[1]}"

    def known(self, texts: Iterable[str]) -> list[str]:
        """Those of ``texts`` that some article holds a word of, as ``search`` cuts them
        (prefixes and single CJK characters left out: they would meet almost any)."""
        self._fresh_counts()
        return [
            text
            for text in texts
            if any(
                self._matches("search_fts", quote(t.text), 0)
                for t in query_terms(text)
                if not (t.prefix or t.unless)
            )
        ]

    def _query_clauses(self, query: str) -> dict[str, str | None]:
        """The FTS5 clauses a question stands for, each quoted, in order, without repeats.

        Each maps to the clause it widens (a word's prefix clause to the word's), or
        None. A term searched only where other terms are unknown is checked here.
        """
        clauses: dict[str, str | None] = {}
        for term in query_terms(query):
            if any(self._matches("search_fts", quote(u), 0) for u in term.unless):
                continue
            clause = quote(term.text) + ("*" if term.prefix else "")
            clauses.setdefault(clause, quote(term.widens) if term.widens else None)
        return clauses

    def _plan(self, clauses: dict[str, str | None]) -> tuple[str, bool]:
        """The FTS5 expression to run, and whether over whole articles or heads only.

        A small index gets the OR of every clause. On a larger one the expression must
        fit the row budget (see ``_fit``). When every term is common in whole articles,
        the heads (title, keys, summary, tags) decide, where words are rarer; when they
        are common there too, the articles having them all.
        """
        if self.count() <= _ROW_BUDGET:
            return " OR ".join(clauses), True
        for table, whole in (("search_fts", True), ("search_head", False)):
            expression = self._fit(table, clauses)
            if expression:
                return expression, whole
        exact = [clause for clause, widened in clauses.items() if widened is None]
        together = " AND ".join(exact)
        if 0 < self._matches("search_head", together, _ROW_BUDGET) <= _ROW_BUDGET:
            return together, False
        if self._matches("search_fts", together, 0):
            return together, True
        return " OR ".join(clauses), True

    def _fit(self, table: str, clauses: dict[str, str | None]) -> str | None:
        """An OR of the rarest clauses whose matches fit the budget, or None.

        Clauses are taken rarest first while the rows they match fit; the commoner
        rest join as one AND group when the articles having them all fit too, which
        adds their weight where they all occur without scoring every article that has
        one. Prefix clauses of common words stay out: they would only cost. None when
        even the rarest clause matches more rows than the budget.
        """
        frequencies: dict[str, int] = {}
        for clause, widened in clauses.items():
            if widened is not None and frequencies.get(widened, 0) > _ROW_BUDGET:
                frequencies[clause] = _ROW_BUDGET + 1  # at least as common as its word
            else:
                frequencies[clause] = self._matches(table, clause, _ROW_BUDGET)
        ranked = sorted((c for c in clauses if frequencies[c]), key=frequencies.__getitem__)
        chosen: list[str] = []
        total = 0
        for clause in ranked:
            if total + frequencies[clause] > _ROW_BUDGET:
                break
            chosen.append(clause)
            total += frequencies[clause]
        if not chosen:
            return None
        rest = [clause for clause in ranked[len(chosen) :] if clauses[clause] is None]
        if rest:
            group = " AND ".join(rest)
            room = _ROW_BUDGET - total
            if 0 < self._matches(table, group, room) <= room:
                chosen.append(f"({group})")
        return " OR ".join(chosen)

    def _matches(self, table: str, expression: str, cap: int) -> int:
        """How many rows of ``table`` match ``expression``, counted up to just past ``cap``."""
        return self._counted(
            f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?)",
            (expression, cap + 1),
        )

    def _counted(self, sql: str, params: tuple[str | int, ...]) -> int:
        """The count ``sql`` takes, kept: taken again only once the data changed."""
        key = (sql, params)
        if key not in self._counts:
            self._counts[key] = self._conn.execute(sql, params).fetchone()[0]
        return self._counts[key]

    def _fresh_counts(self) -> None:
        """Forget the counts kept when the database changed since: another connection
        committed (PRAGMA data_version moves), or this one wrote (total_changes moves)."""
        now = (self._conn.execute("PRAGMA data_version").fetchone()[0], self._conn.total_changes)
        if now != self._counted_at:
            self._counts.clear()
            self._counted_at = now


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    if conn.in_transaction:
        conn.execute("SAVEPOINT search_index")
        try:
            yield
        except BaseException:
            conn.execute("ROLLBACK TO search_index")
            conn.execute("RELEASE search_index")
            raise
        conn.execute("RELEASE search_index")
    else:
        # IMMEDIATE: a read that later upgrades to a write fails at once (no busy wait)
        # when another connection writes meanwhile, as the web server's requests do.
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            conn.rollback()
            raise
        conn.commit()


def _ensure_schema(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE IF NOT EXISTS search_meta (key TEXT PRIMARY KEY, value TEXT)")
    row = conn.execute("SELECT value FROM search_meta WHERE key = 'schema'").fetchone()
    if row is not None and row[0] != _SCHEMA_VERSION:
        conn.execute("DROP TABLE IF EXISTS search_fts")
        conn.execute("DROP TABLE IF EXISTS search_head")
        conn.execute("DROP TABLE IF EXISTS search_docs")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS search_docs ("
        " id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, hash TEXT NOT NULL)"
    )
    try:
        for table, columns in (("search_fts", COLUMNS), ("search_head", HEAD_COLUMNS)):
            conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5("
                f"{', '.join(columns)}, tokenize = '{TOKENIZER}')"
            )
    except sqlite3.OperationalError as exc:
        if _has_fts5(conn):
            raise
        raise KbAiError(
            f"The SQLite library of this Python ({sqlite3.sqlite_version}) has no FTS5,"
            " which the wiki search needs.",
            hint="use a Python built with FTS5, such as the python.org or Debian builds",
        ) from exc
    if row is None or row[0] != _SCHEMA_VERSION:
        conn.execute(
            "INSERT OR REPLACE INTO search_meta (key, value) VALUES ('schema', ?)",
            (_SCHEMA_VERSION,),
        )


def _has_fts5(conn: sqlite3.Connection) -> bool:
    return bool(conn.execute("SELECT sqlite_compileoption_used('ENABLE_FTS5')").fetchone()[0])


def _delete_row(conn: sqlite3.Connection, doc_id: int) -> None:
    conn.execute("DELETE FROM search_fts WHERE rowid = ?", (doc_id,))
    conn.execute("DELETE FROM search_head WHERE rowid = ?", (doc_id,))


def content_hash(doc: SearchDoc) -> str:
    """What the index keeps to know an article changed."""
    payload = [_SCHEMA_VERSION, doc.title, doc.summary, doc.keys, doc.tags, doc.body]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode()).hexdigest()


def _index_fields(doc: SearchDoc) -> tuple[str, ...]:
    return tuple(
        index_text(text)
        for text in (doc.title, "\n".join(doc.keys), doc.summary, "\n".join(doc.tags), doc.body)
    )
