"""Which raw slug a source gets: the one it had when it compiled before (its state row,
by origin), else a new one from its title that no other source holds. The one place a
run decides a source's identity in raw/."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from compiler.sources import Source
from compiler.state import Work
from wiki import slugify, source_articles, unique_slug


def taken_slugs(known: Mapping[str, Any]) -> set[str]:
    """The raw slugs the sources compiled before hold (state rows by origin)."""
    return {PurePosixPath(p).stem for p in (r["raw_path"] for r in known.values()) if p}


def allocate_work(src: Source, known: Mapping[str, Any], taken: set[str]) -> Work:
    """The work of ``src`` under its raw slug: its earlier one, or a new one not in
    ``taken`` (the slugs held, and handed out so far in this run)."""
    row = known.get(src.origin)
    if row is not None and row["raw_path"]:
        raw_path = row["raw_path"]
        slug = PurePosixPath(raw_path).stem
        previous = tuple(source_articles(row))
    else:
        slug = unique_slug(slugify(src.title), taken)
        raw_path = f"raw/{slug}.md"
        previous = ()
    return Work(src, slug, raw_path, previous)
