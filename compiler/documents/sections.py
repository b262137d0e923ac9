"""Splitting a converted document for extraction by its own structure: its top-level
sections (headings, or a PDF's bookmarks, which the converter turned into headings) are
one extraction call each; a section too long for one call is split at its subsections,
then at pages (or slides, sheets), then at paragraphs, packed up to the limit. So the
calls for a document grow with its sections, and a page is never cut in two when it fits.

A piece that starts inside a page carries that page's marker "(continued)", so the
model and the citations always know which page a fact is on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import islice

from compiler.documents.markers import MARKER, continued

_HEADING = re.compile(r"^(#{1,6}) \S")
MARKER_LEVEL = 7
PARAGRAPH_LEVEL = 8
# A top-level section shorter than this joins the next one (a title page, a contents list).
MIN_SECTION_CHARS = 1_500


def split_sections(text: str, limit: int) -> list[str]:
    if len(text) <= limit:
        return [text]
    segments = _segments(text)
    pieces = _split(segments, limit, top=True)
    return _carry_markers([p for p in pieces if p.strip()])


def _segments(text: str) -> list[tuple[int, str]]:
    """(boundary level at its start, text) for each run of lines; a heading line starts a
    segment of its level, a marker line one of level 7, a blank line one of level 8."""
    out: list[tuple[int, list[str]]] = [(0, [])]
    blank = False
    for line in text.split("\n"):
        m = _HEADING.match(line)
        if m:
            level = len(m.group(1))
        elif MARKER.fullmatch(line):
            level = MARKER_LEVEL
        elif blank and line.strip():
            level = PARAGRAPH_LEVEL
        else:
            level = 0
        blank = not line.strip()
        if level and out[-1][1] and any(s.strip() for s in out[-1][1]):
            prev = out[-1][1]
            # a heading directly followed by its page marker stays with it
            if not (
                level == MARKER_LEVEL and all(_HEADING.match(s) or not s.strip() for s in prev)
            ):
                out.append((level, []))
        elif level and not out[-1][1]:
            out[-1] = (level, [])
        out[-1][1].append(line)
    return [(lvl, "\n".join(lines).strip("\n")) for lvl, lines in out if "".join(lines).strip()]


def _size(segments: list[tuple[int, str]]) -> int:
    return sum(len(s) + 2 for _, s in segments)


def _join(segments: list[tuple[int, str]]) -> str:
    return "\n\n".join(s for _, s in segments)


def _split(segments: list[tuple[int, str]], limit: int, *, top: bool) -> list[str]:
    if _size(segments) <= limit:
        return [_join(segments)]
    inner = [lvl for lvl, _ in segments[1:] if lvl]
    if not inner:  # one block longer than the limit: cut at lines, then characters
        return _hard_split(_join(segments), limit)
    cut = min(inner)
    groups: list[list[tuple[int, str]]] = [[]]
    for seg in segments:
        if seg[0] == cut and groups[-1]:
            groups.append([])
        groups[-1].append(seg)
    if top and cut < MARKER_LEVEL:
        return _sections(groups, limit)
    return _pack(groups, limit)


def _sections(groups: list[list[tuple[int, str]]], limit: int) -> list[str]:
    """Top-level sections: one piece each (tiny ones join the next), long ones split."""
    out: list[str] = []
    pending: list[tuple[int, str]] = []
    for group in groups:
        pending += group
        if _size(pending) < MIN_SECTION_CHARS:
            continue
        out += _split(pending, limit, top=False)
        pending = []
    if pending:
        out += _split(pending, limit, top=False)
    return out


def _pack(groups: list[list[tuple[int, str]]], limit: int) -> list[str]:
    out: list[str] = []
    current: list[tuple[int, str]] = []
    for group in groups:
        if _size(group) > limit:
            pieces = _split(group, limit, top=False)
            if current and _size(current) < MIN_SECTION_CHARS:
                # a lone heading goes with what follows it (a little over the limit)
                pieces[0] = f"{_join(current)}\n\n{pieces[0]}"
            elif current:
                out.append(_join(current))
            current = []
            out += pieces
        elif _size(current) + _size(group) > limit:
            out.append(_join(current))
            current = list(group)
        else:
            current += group
    if current:
        out.append(_join(current))
    return out


def _hard_split(text: str, limit: int) -> list[str]:
    out, current = [], ""
    for line in text.split("\n"):
        while len(line) > limit:
            if current:
                out.append(current)
                current = ""
            out.append(line[:limit])
            line = line[limit:]
        if len(current) + len(line) + 1 > limit:
            out.append(current)
            current = line
        else:
            current = f"{current}\n{line}" if current else line
    if current:
        out.append(current)
    return out


def _carry_markers(pieces: list[str]) -> list[str]:
    """Each piece that starts inside a unit (a page, a slide, a sheet) opens with that
    unit's marker, marked "(continued)"."""
    out: list[str] = []
    last = ""
    for piece in pieces:
        body = "\n".join(
            line for line in piece.split("\n") if not _HEADING.match(line) and line.strip()
        )
        first = MARKER.match(body)
        if last and not first:
            piece = f"{continued(last)}\n\n{piece}"
        markers = [m.group(0) for m in MARKER.finditer(piece)]
        if markers:
            last = markers[-1].replace(" (continued)", "")
        out.append(piece)
    return out


MAX_OUTLINE = 80


def outline(text: str) -> list[str]:
    """The document's headings of its two top levels, in order, indented by level, each
    with the pages it spans where the text has page markers ("1 Basics (pp. 2-9)",
    "  1.1 Spaces (pp. 2-4)"); empty when it has fewer than three (nothing worth an
    outline)."""
    if len(_OUTLINE.findall(text)) < 3:
        return []
    items = [("  " * s.level) + s.title + pages_of(s) for s in outline_sections(text)]
    return list(dict.fromkeys(items))


_OUTLINE = re.compile(r"^(#{1,6}) (.+)$", re.M)
_OUTLINE_LINE = re.compile(r"^(#{1,6}) (.+)$")


@dataclass(frozen=True)
class Section:
    level: int  # 0 for the top level of the document's outline
    title: str
    first: int | None  # pages (or slides) it spans; None without markers
    last: int | None


def outline_sections(text: str) -> list[Section]:
    """The document's two top heading levels, each with the pages it spans (a PDF's)."""
    lines = text.split("\n")
    heads: list[tuple[int, str, int | None, bool]] = []  # level, title, page, starts a page
    page: int | None = None
    last_page: int | None = None
    for i, line in enumerate(lines):
        marker = MARKER.fullmatch(line)
        if marker and marker.group(1) == "page":  # pages only: slides are not ranges
            page = last_page = int(marker.group(2))
            continue
        m = _OUTLINE_LINE.match(line)
        if not m:
            continue
        # a heading that opens a page comes just before that page's marker (a chapter's,
        # before its first section's heading too)
        rest = islice(lines, i + 1, None)
        following = next((x for x in rest if x.strip() and not _OUTLINE_LINE.match(x)), "")
        upcoming = MARKER.fullmatch(following)
        at_start = bool(upcoming and upcoming.group(1) == "page")
        start = int(upcoming.group(2)) if at_start else page
        heads.append((len(m.group(1)), m.group(2).strip(), start, at_start))
    if not heads:
        return []
    top = min(level for level, *_ in heads)
    out: list[Section] = []
    for k, (level, title, start, _) in enumerate(heads):
        if level > top + 1:
            continue
        end = last_page
        for nxt_level, _, nxt_start, nxt_at_start in heads[k + 1 :]:
            if nxt_level <= level and nxt_start is not None:
                end = nxt_start - 1 if nxt_at_start else nxt_start
                break
        if start is not None and end is not None:
            end = max(end, start)
        out.append(Section(level - top, title, start, end))
    return out[:MAX_OUTLINE]


def pages_of(section: Section) -> str:
    """ " (pp. 6-9)", " (p. 4)", or "" for a section of a text without page markers."""
    if section.first is None:
        return ""
    if section.first == section.last:
        return f" (p. {section.first})"
    return f" (pp. {section.first}-{section.last})"
