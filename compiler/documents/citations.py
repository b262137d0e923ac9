"""Page and slide citations in an article's ``sources``: "raw/thesis.md#pages=12-14,31"
names the pages of a document whose facts the article kept (each fact arrives tagged
"(pp. 12-14)" or "(slide 3)" by the extract stage; the tags the written body still
carries say which were used)."""

from __future__ import annotations

import re
from collections.abc import Iterable

_TAG = re.compile(r"\((p\.|pp\.|slide|slides) (\d+)(?:-(\d+))?\)")
_KIND = {"p.": "pages", "pp.": "pages", "slide": "slides", "slides": "slides"}
MAX_RANGES = 20


def cited(text: str) -> dict[str, set[int]]:
    """Every page and slide a text cites: {"pages": {3, 4}, "slides": {2}}."""
    out: dict[str, set[int]] = {}
    for word, start, end in _TAG.findall(text):
        first, last = int(start), int(end or start)
        if 0 <= last - first < 1_000:
            out.setdefault(_KIND[word], set()).update(range(first, last + 1))
    return out


def page_ranges(pages: Iterable[int]) -> str:
    """3,4,5,9 -> "3-5,9"."""
    out: list[str] = []
    ordered = sorted(set(pages))
    i = 0
    while i < len(ordered) and len(out) < MAX_RANGES:
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(out)


def base_path(entry: str) -> str:
    """The raw path of a sources entry, without its pages."""
    return entry.split("#", 1)[0]


def with_pages(sources: list[str], material: dict[str, str], body: str) -> list[str]:
    """``sources`` with each document's entry naming the pages (or slides) ``body`` cites
    of it; ``material`` maps a raw path to the text of its material (tagged facts)."""
    used = cited(body)
    out: list[str] = []
    for entry in sources:
        base = base_path(entry)
        if base in material:
            entry = base
            for kind, numbers in sorted(cited(material[base]).items()):
                kept = numbers & used.get(kind, set())
                if kept:
                    entry = f"{base}#{kind}={page_ranges(kept)}"
                    break
        if all(base_path(e) != base for e in out):
            out.append(entry)
    return out
