"""What a compile run carries between its stages: each source's work, and the plan of
articles to write. Below both the run and what it records."""

from __future__ import annotations

from dataclasses import dataclass, field

from compiler.classify import Target
from compiler.extract import Extraction
from compiler.sources import Source
from compiler.write import Material

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
