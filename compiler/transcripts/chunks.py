"""Chunks of a normalised transcript for the extract stage: whole turns packed up to the
budget, so a session of N characters needs about ceil(N / budget) model calls.

A turn that does not fit in what is left of the current chunk goes to the next one
when the current one is nearly full; otherwise, and whenever a turn is larger than the
budget by itself, it is cut at a line end to fill the chunk, and its rest continues
under its own heading marked "(continued)". Every chunk but the last is at least
``FULL`` of the budget, and none is larger than it.
"""

from __future__ import annotations

import re

FULL = 0.9
_TURN = re.compile(r"\n+(?=## (?:User|Assistant)\n)")
_SEP = "\n\n"


def _cut(text: str, room: int) -> tuple[str, str]:
    """(head, rest): ``head`` at most ``room`` characters, ending at a line end when one
    is in its second half."""
    if room <= 0:
        return "", text
    if len(text) <= room:
        return text, ""
    at = text.rfind("\n", 0, room)
    if at < room // 2:
        at = room
    return text[:at].rstrip(), text[at:].lstrip("\n")


def _continued(turn: str) -> str:
    heading = turn.split("\n", 1)[0]
    return heading + " (continued)" + _SEP if heading.startswith("## ") else ""


def pack_turns(text: str, limit: int) -> list[str]:
    if len(text) <= limit:
        return [text]
    chunks: list[str] = []
    current = ""
    for turn in _TURN.split(text):
        joined = f"{current}{_SEP}{turn}" if current else turn
        if len(joined) <= limit:
            current = joined
            continue
        if current and len(current) >= FULL * limit:
            chunks.append(current)
            current = ""
            if len(turn) <= limit:
                current = turn
                continue
        prefix = _continued(turn)
        room = limit - len(current) - len(_SEP) if current else limit
        head, rest = _cut(turn, room)
        if head:
            chunks.append(f"{current}{_SEP}{head}" if current else head)
        elif current:
            chunks.append(current)
        current = ""
        while rest:
            head, rest = _cut(rest, limit - len(prefix))
            if rest:
                chunks.append(prefix + head)
            else:
                current = prefix + head  # the turn's end: later turns may join it
    if current:
        chunks.append(current)
    return [c for c in chunks if c.strip()]
