"""Where a line of converted text came from: page (PDF), slide (PPTX) and sheet (XLSX)
markers, kept in the text in raw/ as HTML comments, so Markdown viewers hide them and
the model, the source view and citations can read them.

    <!-- page 12 -->     <!-- slide 3 -->     <!-- sheet: Budget 2024 -->
"""

from __future__ import annotations

import re

MARKER = re.compile(
    r"^<!-- (page|slide) (\d+)(?: \(continued\))? -->$|^<!-- sheet: (.+?) -->$", re.M
)


def page_marker(number: int) -> str:
    return f"<!-- page {number} -->"


def slide_marker(number: int) -> str:
    return f"<!-- slide {number} -->"


def sheet_marker(name: str) -> str:
    clean = re.sub(r"\s+", " ", name.replace("-->", "")).strip() or "sheet"
    return f"<!-- sheet: {clean} -->"


def continued(marker: str) -> str:
    """The marker repeated at the top of a piece that starts in the middle of its unit."""
    if marker.startswith("<!-- sheet:"):
        return marker
    return marker.replace(" -->", " (continued) -->")


def units(text: str) -> list[tuple[str, str]]:
    """(kind, label) of every marker in ``text``, in order: ("page", "12"), ("sheet", "Q1")."""
    out = []
    for m in MARKER.finditer(text):
        out.append(("sheet", m.group(3)) if m.group(3) else (m.group(1), m.group(2)))
    return out


def span(text: str) -> str:
    """Where a piece of text came from, as a reader would cite it: "p. 3", "pp. 3-5",
    "slides 2-4", "sheet Budget"; "" when it has no markers."""
    found = units(text)
    if not found:
        return ""
    kind = found[0][0]
    labels = [label for k, label in found if k == kind]
    first, last = labels[0], labels[-1]
    if kind == "sheet":
        names = list(dict.fromkeys(labels))
        return ("sheet " if len(names) == 1 else "sheets ") + ", ".join(names[:5])
    if kind == "page":
        return f"p. {first}" if first == last else f"pp. {first}-{last}"
    return f"slide {first}" if first == last else f"slides {first}-{last}"
