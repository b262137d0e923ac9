"""When a source's facts held: the date the writer weighs sources by.

In order: a ``date:`` in the source's own frontmatter, a date in its file name
(``2026-03-02-standup.md``, ``plan-2026-03.md``), the first ISO date in its text (a
meeting note usually opens with it), else the day it was added. Only the first three
are the source's own word (``stated``); the writer is told which.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath

_ISO = re.compile(r"(?<!\d)(\d{4})-(0[1-9]|1[0-2])(?:-(0[1-9]|[12]\d|3[01]))?(?!\d)")
_FRONTMATTER_DATE = re.compile(r"^date\s*:\s*['\"]?(\S+?)['\"]?\s*$", re.M)
_TEXT_HEAD = 2_000  # a date stated further in is about something else, not the note


@dataclass(frozen=True)
class SourceDate:
    date: str  # ISO: YYYY-MM-DD or YYYY-MM
    stated: bool  # by the source (frontmatter, name, text), not the day it was added


def source_date(text: str, origin: str, added: str) -> SourceDate:
    """The date of a source with ``text`` from ``origin``, added at ``added`` (ISO)."""
    head = text.lstrip("\ufeff")
    if head.startswith("---\n"):
        end = head.find("\n---", 4)
        if end > 0 and (m := _FRONTMATTER_DATE.search(head[4:end])) and (d := _iso(m.group(1))):
            return SourceDate(d, True)
    name = PurePath(origin).name if origin else ""
    if d := _iso(name):
        return SourceDate(d, True)
    if d := _iso(head[:_TEXT_HEAD]):
        return SourceDate(d, True)
    return SourceDate(added[:10], False)


def _iso(text: str) -> str | None:
    m = _ISO.search(text)
    if m is None:
        return None
    return "-".join(part for part in m.groups() if part)
