"""Which raw slug a source gets: the one of the source it revises (compiler/identity.py
finds it), the one it had when it compiled before (its state row, by origin), else a
new one from its title that no other source holds. The one place a run decides a
source's identity in raw/."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any

from compiler.identity import MAYBE_TEXT, Ambiguous, Match
from compiler.identity_index import Arrival, SourceIndex
from compiler.result import MaybeRevision, Revision
from compiler.sources import Source
from compiler.state import Work
from wiki import slug_of, slugify, source_articles, unique_slug
from wiki.slugs import FALLBACK_SLUG


def taken_slugs(known: Mapping[str, Any]) -> set[str]:
    """The raw slugs the sources compiled before hold (state rows by origin)."""
    return {slug_of(p) for p in (r["raw_path"] for r in known.values()) if p}


@dataclass
class Identities:
    """What allocation found of the run's sources' identity, for the result."""

    revisions: list[Revision] = field(default_factory=list)
    maybe_revisions: list[MaybeRevision] = field(default_factory=list)
    superseded: list[tuple[str, str]] = field(default_factory=list)  # (old raw, new raw)
    in_run: set[str] = field(default_factory=set)  # the raw paths this run compiles
    texts: dict[str, str] = field(default_factory=dict)  # checksum -> its raw path, this run


def copy_in_run(src: Source, known: Mapping[str, Any], found_so_far: Identities) -> str | None:
    """The raw path of the source this run compiles already with ``src``'s very text (a
    second copy of one document: it is recorded as that source, not compiled again), or
    None. A document compiled before keeps its own source."""
    if not is_new(src, known):
        return None
    return found_so_far.texts.get(src.checksum)


def is_new(src: Source, known: Mapping[str, Any]) -> bool:
    """Whether ``src`` came by a way (origin) no compiled source came by before."""
    row = known.get(src.origin)
    return not (row is not None and row["raw_path"])


def allocate_source(
    src: Source,
    known: Mapping[str, Any],
    taken: set[str],
    index: SourceIndex,
    found_so_far: Identities,
    *,
    arrival: Arrival | None = None,
) -> Work:
    """The work of ``src``: under the raw slug of the source it revises, its own earlier
    one, or a new one (what was found goes to ``found_so_far``; a document is not a
    second revision of a source in the same run). Raises UnknownSourceError for a
    revises or kb-id that names no source."""
    row = known.get(src.origin)
    said = arrival is not None and bool(arrival.revises)
    # a document compiled before keeps its source, unless a person says otherwise
    unknown = row is None or not row["raw_path"]
    found = index.identify(src, arrival) if unknown or said else None
    revises = None
    if isinstance(found, Match) and found.source.raw_path in found_so_far.in_run:
        found = Ambiguous(
            [(found.source, found.similarity or 1.0)],
            "this run compiles another revision of it",
        )
    if isinstance(found, Match):
        revises = (found.source.raw_path, index.articles_of(found.source.raw_path))
    w = allocate_work(src, known, taken, revises)
    old = row["raw_path"] if row is not None else None
    if (
        old
        and old != w.raw_path
        and not any(r["raw_path"] == old for o, r in known.items() if o != src.origin)
    ):  # said to revise another source: its own copy from before goes after the run
        found_so_far.superseded.append((old, w.raw_path))
    if (
        not unknown
        and revises is None
        and len(w.previous_articles) == 1
        and row["checksum"] != src.checksum
        and index.likeness(w.raw_path, src) >= MAYBE_TEXT
    ):  # the same file revised where it is, still on its subject: it keeps its article
        w = replace(w, alike=w.previous_articles)
    found_so_far.in_run.add(w.raw_path)
    found_so_far.texts.setdefault(src.checksum, w.raw_path)
    index.remember(w.raw_path, src, arrival.name if arrival else "")
    if isinstance(found, Match):
        found_so_far.revisions.append(Revision(src.origin, w.raw_path, found.way, found.similarity))
    elif isinstance(found, Ambiguous):
        candidates = tuple((k.raw_path, s) for k, s in found.candidates if k.raw_path != w.raw_path)
        if candidates:
            found_so_far.maybe_revisions.append(
                MaybeRevision(src.origin, w.raw_path, candidates, found.reason)
            )
            # a new source, but its text is much like that source's: it is on the
            # subject of that source's article (compiler/revisions.py keep_articles)
            home = index.articles_of(candidates[0][0])
            if len(home) == 1 and not w.previous_articles:
                w = replace(w, alike=tuple(home))
    return w


def allocate_work(
    src: Source,
    known: Mapping[str, Any],
    taken: set[str],
    revises: tuple[str, list[str]] | None = None,
) -> Work:
    """The work of ``src`` under its raw slug: the one of the source it ``revises``
    (raw path, the articles it fed), its earlier one, or a new one not in ``taken``
    (the slugs held, and handed out so far in this run)."""
    row = known.get(src.origin)
    if revises is not None:
        raw_path, previous = revises[0], tuple(revises[1])
        slug = PurePosixPath(raw_path).stem
    elif row is not None and row["raw_path"]:
        raw_path = row["raw_path"]
        slug = PurePosixPath(raw_path).stem
        previous = tuple(source_articles(row))
    else:
        slug = unique_slug(raw_slug(src), taken)
        raw_path = f"raw/{slug}.md"
        previous = ()
    return Work(src, slug, raw_path, previous, revision=revises is not None)


def raw_slug(src: Source) -> str:
    """The slug of a new source: from its title, else (a title of symbols only) from the
    file name it came under; "untitled" only for a source with neither."""
    slug = slugify(src.title)
    if slug == FALLBACK_SLUG:
        name = PurePosixPath(src.origin.rsplit("#", 1)[-1].split("?", 1)[0]).stem
        slug = slugify(name) if ":" not in name else slug
    return slug
