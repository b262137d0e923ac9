"""What a compile run carries between its stages: each source's work, and the plan of
articles to write. Below both the run and what it records."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import Any

from compiler.classify import Target
from compiler.dating import source_date
from compiler.extract import Extraction
from compiler.sources import Source
from compiler.write import Material
from wiki import slugify, source_articles, unique_slug
from wiki.slugs import FALLBACK_SLUG

#: Articles to write: path -> (target, the material for it, indexes of the sources in it).
Plan = dict[str, tuple[Target, list[Material], list[int]]]


@dataclass
class Work:
    """One source on its way through extract and classify."""

    source: Source
    slug: str
    raw_path: str
    previous_articles: list[str]
    previous_text: str | None = None
    extraction: Extraction | None = None
    targets: list[Target] = field(default_factory=list)
    error: str | None = None
    revision: bool = False  # a revision of a source compiled from elsewhere (identity)


def taken_slugs(known: dict[str, Any]) -> set[str]:
    """The raw slugs the sources compiled before hold (state rows by origin)."""
    return {PurePosixPath(p).stem for p in (r["raw_path"] for r in known.values()) if p}


def allocate_work(
    src: Source,
    known: dict[str, Any],
    taken: set[str],
    revises: tuple[str, list[str]] | None = None,
) -> Work:
    """The work of ``src`` under its raw slug: the one of the source it ``revises``
    (raw path, the articles it fed; see compiler.identity), its earlier one, or a new
    one not in ``taken`` (which it joins)."""
    row = known.get(src.origin)
    if revises is not None:
        raw_path, previous = revises[0], list(revises[1])
        slug = PurePosixPath(raw_path).stem
    elif row is not None and row["raw_path"]:
        raw_path = row["raw_path"]
        slug = PurePosixPath(raw_path).stem
        previous = source_articles(row)
    else:
        slug = unique_slug(raw_slug(src), taken)
        raw_path = f"raw/{slug}.md"
        previous = []
    taken.add(slug)
    return Work(src, slug, raw_path, previous, revision=revises is not None)


def raw_slug(src: Source) -> str:
    """The slug of a new source: from its title, else (a title of symbols only) from the
    file name it came under; "untitled" only for a source with neither."""
    slug = slugify(src.title)
    if slug == FALLBACK_SLUG:
        name = PurePosixPath(src.origin.rsplit("#", 1)[-1].split("?", 1)[0]).stem
        slug = slugify(name) if ":" not in name else slug
    return slug


def plan_articles(work: list[Work], existing: set[str], dropped: dict[str, set[str]]) -> Plan:
    """Group material by article, in input order; the first creator of a subject wins.

    An article a source fed before and feeds no longer is planned too (with no new
    material), and ``dropped`` gets its path -> the raw paths that left it."""
    plan: Plan = {}
    by_slug: dict[str, str] = {PurePosixPath(p).stem: p for p in existing}
    for i, w in enumerate(work):
        if w.error or w.extraction is None:
            continue
        text = w.extraction.to_markdown()
        when = source_date(w.source.text, w.source.origin, datetime.now(UTC).isoformat())
        dated = (when.date, when.stated)
        targets = list(w.targets)
        for old in w.previous_articles:  # fed before, not now: the source leaves it
            if old in existing and all(t.path != old for t in targets):
                dropped.setdefault(old, set()).add(w.raw_path)
                plan.setdefault(old, (Target(old, "", "", exists=True), [], []))
        for t in targets:
            slug = PurePosixPath(t.path).stem
            path = by_slug.setdefault(slug, t.path)
            if path != t.path or (path in plan and not t.exists):
                t = plan[path][0] if path in plan else Target(path, t.title, t.type, True)
            revised = w.previous_text is not None and path in w.previous_articles
            material = Material(
                w.raw_path, text, revised, w.previous_text if revised else None, *dated
            )
            entry = plan.setdefault(path, (t, [], []))
            entry[1].append(material)
            entry[2].append(i)
    return plan
