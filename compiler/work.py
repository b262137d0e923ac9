"""What a compile run carries between its stages: each source's work, and the plan of
articles to write. Below both the run and what it records."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from compiler.classify import Target
from compiler.extract import Extraction
from compiler.sources import Source
from compiler.write import Material
from wiki import slugify, source_articles, unique_slug

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


def taken_slugs(known: dict[str, Any]) -> set[str]:
    """The raw slugs the sources compiled before hold (state rows by origin)."""
    return {PurePosixPath(p).stem for p in (r["raw_path"] for r in known.values()) if p}


def allocate_work(src: Source, known: dict[str, Any], taken: set[str]) -> Work:
    """The work of ``src`` under its raw slug: its earlier one, or a new one not in
    ``taken`` (which it joins)."""
    row = known.get(src.origin)
    if row is not None and row["raw_path"]:
        raw_path = row["raw_path"]
        slug = PurePosixPath(raw_path).stem
        previous = source_articles(row)
    else:
        slug = unique_slug(slugify(src.title), taken)
        raw_path = f"raw/{slug}.md"
        previous = []
    taken.add(slug)
    return Work(src, slug, raw_path, previous)
