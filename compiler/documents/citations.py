"""Page citations in an article's ``sources``: "raw/thesis.md#pages=12-14,31" names the
pages of a document whose facts the article kept (each fact arrives tagged "(pp. 12-14)"
by the extract stage; the tags the written body still carries say which were used)."""

from __future__ import annotations

import re
from collections.abc import Iterable

_TAG = re.compile(r"\((?:p\. (\d+)|pp\. (\d+)-(\d+))\)")
MAX_RANGES = 20


def cited_pages(text: str) -> set[int]:
    """Every page a text cites with a "(p. 3)" or "(pp. 3-5)" tag."""
    pages: set[int] = set()
    for one, start, end in _TAG.findall(text):
        if one:
            pages.add(int(one))
        elif int(end) - int(start) < 1_000:
            pages.update(range(int(start), int(end) + 1))
    return pages


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


def with_pages(sources: list[str], cited: dict[str, str], body: str) -> list[str]:
    """``sources`` with each document's entry naming the pages ``body`` cites of it;
    ``cited`` maps a raw path to the text of its material (tagged facts)."""
    used = cited_pages(body)
    out: list[str] = []
    for entry in sources:
        base = base_path(entry)
        if base in cited:
            pages = cited_pages(cited[base]) & used
            entry = f"{base}#pages={page_ranges(pages)}" if pages else base
        if all(base_path(e) != base for e in out):
            out.append(entry)
    return out
