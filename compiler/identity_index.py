"""The wiki's sources as identity looks them up: a signature of each raw source in
state.db (its title, the file name it came under, a sketch of its shingles), kept in
step with raw/ (a source missing from it is read once, one gone from raw/ is dropped).

Finding the candidates of a document costs a few indexed queries whatever the number of
sources; only the few whose sketch shares hashes with the document's are read, for an
exact similarity (see compiler/identity.py).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compiler.identity import (
    MAYBE_TEXT,
    Ambiguous,
    Document,
    Known,
    Match,
    body_text,
    find_revised,
    jaccard,
    name_of_origin,
    normal_name,
    shingle_hashes,
    sketch,
    source_id,
    title_key,
    unknown_source,
)
from compiler.renames import renamed_from
from compiler.sources import Source
from kb_ai.errors import KbAiError
from wiki import KnowledgeBase, apply_migrations, is_slug, list_raw, read_raw, source_articles

MIGRATIONS = (
    "CREATE TABLE source_identity (raw_path TEXT PRIMARY KEY, title TEXT NOT NULL,"
    " title_key TEXT NOT NULL, name TEXT NOT NULL, shingles INTEGER NOT NULL)",
    "CREATE INDEX source_identity_name ON source_identity(name, title_key)",
    "CREATE TABLE source_sketch (hash INTEGER NOT NULL, raw_path TEXT NOT NULL)",
    "CREATE INDEX source_sketch_hash ON source_sketch(hash)",
    "CREATE INDEX source_sketch_raw ON source_sketch(raw_path)",
    # sources that look like revisions of each other, found as each is stored (for lint)
    "CREATE TABLE source_alike (a TEXT NOT NULL, b TEXT NOT NULL, similarity REAL NOT NULL,"
    " why TEXT NOT NULL, PRIMARY KEY (a, b))",
    "CREATE INDEX source_alike_b ON source_alike(b)",
)
#: Candidates read for an exact similarity, at most (the sketch ranks them).
MAX_CANDIDATES = 5


@dataclass(frozen=True)
class Arrival:
    """What came with a document besides its text: the file name it was sent under
    (an upload's), and the source the sender said it revises."""

    name: str = ""
    revises: str = ""


def check_source_id(kb: KnowledgeBase, said: str) -> str:
    """The id of the source ``said`` names (raises UnknownSourceError when none)."""
    ident = source_id(said)
    if not is_slug(ident) or not kb.resolve(f"raw/{ident}.md", under="raw").is_file():
        raise unknown_source(said)
    return ident


class SourceIndex:
    """:class:`compiler.identity.KnownSources` over state.db, for one run: what a run
    adds is seen by the sources it reads after."""

    def __init__(self, kb: KnowledgeBase, conn: sqlite3.Connection, known: dict[str, Any]):
        self.kb = kb
        self.conn = conn
        apply_migrations(conn, "identity", MIGRATIONS)
        # raw path -> the state row compiled into it last (an origin per way it came)
        self.rows: dict[str, Any] = {}
        self.origins: dict[str, str] = {}
        for origin, row in known.items():
            raw = row["raw_path"]
            if not raw:
                continue
            self.origins[origin] = raw
            if raw not in self.rows or (row["updated_at"] or "") > (
                self.rows[raw]["updated_at"] or ""
            ):
                self.rows[raw] = row
        self._shingles: dict[str, frozenset[int]] = {}
        self._fresh: set[str] = set()  # raw paths of this run, perhaps not written yet
        self._synced = False  # with raw/: at the first question (a run of known files asks none)
        # The last text's candidates, until the index changes: a source is compared when
        # it is identified and again when it is stored (for lint's list of alike sources).
        self._last_similar: tuple[frozenset[int], list[tuple[Known, float]]] | None = None

    # -- KnownSources ----------------------------------------------------------------

    def by_id(self, ident: str) -> Known | None:
        raw = f"raw/{ident}.md"
        if not is_slug(ident) or not self._on_disk(raw):
            return None
        return self._known(raw)

    def by_origin(self, origins: Sequence[str]) -> Known | None:
        for origin in origins:
            raw = self.origins.get(origin)
            if raw is not None and self._on_disk(raw):
                return self._known(raw)
        return None

    def named(self, name: str) -> list[Known]:
        rows = self.conn.execute(
            "SELECT raw_path, title, name FROM source_identity WHERE name = ? ORDER BY raw_path",
            (normal_name(name),),
        )
        return [Known(r[0], r[1], r[2]) for r in rows if self._on_disk(r[0])]

    def similar(self, shingles: frozenset[int]) -> list[tuple[Known, float]]:
        last = self._last_similar
        if last is not None and last[0] is shingles:
            return last[1]
        mine = sketch(shingles)
        if not mine:
            return []
        # Two texts at MAYBE_TEXT share about 2J/(1+J) of their sketches (a short text's
        # sketch is all of it, and shares at least J): fewer shared is no candidate.
        least = max(1, int(len(mine) * MAYBE_TEXT / 2))
        marks = ",".join("?" * len(mine))
        rows = self.conn.execute(
            f"SELECT raw_path, COUNT(*) AS n FROM source_sketch WHERE hash IN ({marks})"
            " GROUP BY raw_path HAVING n >= ? ORDER BY n DESC, raw_path LIMIT ?",
            (*mine, least, MAX_CANDIDATES),
        ).fetchall()
        scored = [
            (self._known(r[0]), self.similarity(Known(r[0], ""), shingles))
            for r in rows
            if self._on_disk(r[0])
        ]
        found = sorted(scored, key=lambda item: (-item[1], item[0].raw_path))
        self._last_similar = (shingles, found)
        return found

    def similarity(self, known: Known, shingles: frozenset[int]) -> float:
        theirs = self._shingles_of(known.raw_path)
        return 0.0 if theirs is None else jaccard(shingles, theirs)

    # -- a run's use -------------------------------------------------------------------

    def identify(self, src: Source, arrival: Arrival | None = None) -> Match | Ambiguous | None:
        """The source ``src`` revises (see compiler.identity.find_revised)."""
        arrival = arrival or Arrival()
        self.sync()
        document = Document(
            origin=src.origin,
            title=src.title,
            text=src.text,
            name=arrival.name or name_of_origin(src.origin),
            revises=arrival.revises,
            renamed_from=tuple(self._renamed(src.origin)),
        )
        return find_revised(document, self)

    def likeness(self, raw_path: str, src: Source) -> float:
        """How alike ``src``'s text is to the raw copy at ``raw_path`` as it is on disk
        (before this run writes it): 0.0 when that copy cannot be read."""
        theirs = self._shingles_of(raw_path)
        return 0.0 if theirs is None else jaccard(shingle_hashes(body_text(src.text)), theirs)

    def articles_of(self, raw_path: str) -> list[str]:
        """The articles the source in ``raw_path`` fed when it was compiled last."""
        row = self.rows.get(raw_path)
        return source_articles(row) if row is not None else []

    def remember(self, raw_path: str, src: Source, name: str = "") -> None:
        """``src`` is the source in ``raw_path`` now: later documents are compared with it."""
        shingles = shingle_hashes(body_text(src.text))
        self._shingles[raw_path] = shingles
        self._fresh.add(raw_path)
        self.origins[src.origin] = raw_path
        with self.conn:
            self._store(raw_path, src.title, name or name_of_origin(src.origin), shingles)

    # -- upkeep ----------------------------------------------------------------------

    def sync(self) -> None:
        """The index in step with raw/: sources it lacks are read and added, those gone
        from raw/ forgotten (a state.db from before, a source removed). Once per run."""
        if self._synced:
            return
        self._synced = True
        indexed = {r[0] for r in self.conn.execute("SELECT raw_path FROM source_identity")}
        on_disk = set(list_raw(self.kb))
        missing, gone = sorted(on_disk - indexed), sorted(indexed - on_disk - self._fresh)
        if not missing and not gone:
            return
        with self.conn:
            for raw in gone:
                self._forget(raw)
            for raw in missing:
                try:
                    stored = read_raw(self.kb, raw)
                except (KbAiError, OSError, UnicodeDecodeError):
                    continue  # a damaged raw copy is lint's to report, not a match
                shingles = shingle_hashes(body_text(stored.text))
                self._shingles[raw] = shingles
                self._store(raw, stored.title, name_of_origin(stored.origin), shingles)

    def _store(self, raw: str, title: str, name: str, shingles: frozenset[int]) -> None:
        # (candidates found before this store are still those of the other sources)
        before = self._last_similar
        self._forget(raw)
        self.conn.execute(
            "INSERT INTO source_identity (raw_path, title, title_key, name, shingles)"
            " VALUES (?, ?, ?, ?, ?)",
            (raw, title, title_key(title), normal_name(name), len(shingles)),
        )
        self.conn.executemany(
            "INSERT INTO source_sketch (hash, raw_path) VALUES (?, ?)",
            [(h, raw) for h in sketch(shingles)],
        )
        if before is not None and before[0] is shingles:
            self._last_similar = before
        self._note_alike(raw, title, normal_name(name), shingles)
        self._last_similar = None

    def _note_alike(self, raw: str, title: str, name: str, shingles: frozenset[int]) -> None:
        """The sources ``raw`` looks like a revision of (text in between or closer, or
        the same file name and title), kept for lint to list without reading raw/."""
        found = {k.raw_path: (s, "text alike") for k, s in self.similar(shingles)}
        if name:
            for k in self.named(name):
                if title_key(k.title) == title_key(title):
                    score = found.get(k.raw_path, (self.similarity(k, shingles), ""))[0]
                    found[k.raw_path] = (score, "same file name and title")
        rows = [
            (*sorted((raw, other)), score, why)
            for other, (score, why) in found.items()
            if other != raw and (score >= MAYBE_TEXT or why != "text alike")
        ]
        self.conn.executemany(
            "INSERT OR REPLACE INTO source_alike (a, b, similarity, why) VALUES (?, ?, ?, ?)",
            rows,
        )

    def alike(self) -> list[tuple[Known, Known, float, str]]:
        """Every pair noted alike whose two raw copies are still there, in path order."""
        rows = self.conn.execute(
            "SELECT a, b, similarity, why FROM source_alike ORDER BY a, b"
        ).fetchall()
        return [
            (self._known(a), self._known(b), score, why)
            for a, b, score, why in rows
            if self._on_disk(a) and self._on_disk(b)
        ]

    def _forget(self, raw: str) -> None:
        self._last_similar = None
        self.conn.execute("DELETE FROM source_identity WHERE raw_path = ?", (raw,))
        self.conn.execute("DELETE FROM source_sketch WHERE raw_path = ?", (raw,))
        self.conn.execute("DELETE FROM source_alike WHERE a = ? OR b = ?", (raw, raw))

    def _known(self, raw: str) -> Known:
        row = self.conn.execute(
            "SELECT title, name FROM source_identity WHERE raw_path = ?", (raw,)
        ).fetchone()
        return Known(raw, row[0], row[1]) if row else Known(raw, Path(raw).stem)

    def _on_disk(self, raw: str) -> bool:
        return raw in self._fresh or self._file(raw).is_file()

    def _file(self, raw: str) -> Path:
        """raw/<slug>.md on disk (``raw`` is a raw path the index or state.db holds)."""
        slug = raw.removeprefix("raw/").removesuffix(".md")
        return self.kb.raw_dir / f"{slug if is_slug(slug) else '.invalid'}.md"

    def _shingles_of(self, raw: str) -> frozenset[int] | None:
        if raw not in self._shingles:
            try:  # the raw copy without its provenance: the document's text as it came
                text = body_text(self._file(raw).read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                return None
            self._shingles[raw] = shingle_hashes(body_text(text))
        return self._shingles[raw]

    def _renamed(self, origin: str) -> Iterable[str]:
        """The paths git says the file ``origin`` had, when some source came from its
        repository (no git process otherwise)."""
        if not origin.startswith("/") or "#" in origin:
            return ()
        return renamed_from(Path(origin), self.origins)


def pairs_alike(
    kb: KnowledgeBase, conn: sqlite3.Connection, known: dict[str, Any]
) -> list[tuple[Known, Known, float, str]]:
    """Sources that look like revisions of each other: (a, b, similarity, why), for lint
    (found as each source was stored; raw/ is read only for sources the index lacks)."""
    index = SourceIndex(kb, conn, known)
    index.sync()
    return index.alike()
