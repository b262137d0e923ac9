"""A converted document: Markdown text with its provenance markers, ready to be a source."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass(frozen=True)
class Document:
    """What a converter returns: Markdown ``text`` (with page, slide or sheet markers where
    the format has them), a ``title`` when the file names one, the number of ``units``
    (pages, slides, sheets) and ``notes`` on what was left out (rows past a cap, ...)."""

    text: str
    title: str = ""
    format: str = ""
    units: int = 0
    notes: list[str] = field(default_factory=list)


def clean_text(text: str) -> str:
    """Line ends normalised, control characters dropped, runs of blank lines collapsed."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    text = _CONTROL.sub("", text)
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def has_text(text: str, *, per_unit: int = 0, units: int = 1) -> bool:
    """Whether ``text`` holds words, not only markers and white space."""
    from compiler.documents.markers import MARKER

    letters = len(re.sub(r"\s+", "", MARKER.sub("", text)))
    return letters > 0 and letters >= per_unit * max(units, 1)
