"""Slugs: the file names of raw sources, extractions and articles."""

from __future__ import annotations

import re
import unicodedata

FALLBACK_SLUG = "untitled"


def slugify(text: str, max_len: int = 60) -> str:
    """A file-name-safe slug of ``text``: lowercase words joined by hyphens.

    Latin letters with accents are folded to ASCII ("Café" -> "cafe"); letters of other
    scripts (CJK, Cyrillic, ...) are kept as they are. Everything else (spaces, dots,
    slashes, punctuation) separates words. Never empty: falls back to "untitled".
    """
    out: list[str] = []
    for char in unicodedata.normalize("NFC", text):
        folded = _ascii_fold(char)
        if folded is not None:
            out.append(folded.lower() if folded.isalnum() else "-")
        elif char.isalnum():
            out.append(char.lower())
        else:
            out.append("-")
    slug = re.sub(r"-{2,}", "-", "".join(out)).strip("-")
    slug = slug[:max_len].rstrip("-")
    return slug or FALLBACK_SLUG


def slug_of(path: str) -> str:
    """The slug of a KB-relative path: its file name without the suffix (what
    ``PurePosixPath(path).stem`` gives up to Python 3.13, at a third of the cost: a
    compile into a wiki of 10,000 articles looks up every article's slug; a name ending
    in a lone dot keeps it, as it did there)."""
    name = next((part for part in reversed(path.split("/")) if part and part != "."), "")
    dot = name.rfind(".")
    return name[:dot] if 0 < dot < len(name) - 1 else name


def _ascii_fold(char: str) -> str | None:
    """The ASCII letters or digits ``char`` decomposes to, or None if it has none."""
    if char.isascii():
        return char
    base = "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c))
    if base and base.isascii() and base.isalnum():
        return base
    return None


def unique_slug(base: str, taken: set[str]) -> str:
    """``base`` if it is free, else the first free one of ``base-2``, ``base-3``, ..."""
    if base not in taken:
        return base
    n = 2
    while f"{base}-{n}" in taken:
        n += 1
    return f"{base}-{n}"


def is_slug(text: str) -> bool:
    """Whether ``text`` could be a file name kb-ai writes: letters, digits, inner hyphens."""
    return (
        bool(text)
        and not text.startswith("-")
        and not text.endswith("-")
        and all(c == "-" or c.isalnum() for c in text)
    )
