"""The log: log.md, an append-only record of what each compile run did."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from difflib import SequenceMatcher

from wiki.layout import LOG_HEADER, KnowledgeBase


def append_log(
    kb: KnowledgeBase, title: str, lines: list[str], when: datetime | None = None
) -> None:
    """Append a ``## <timestamp> <title>`` section with ``lines`` as list items to log.md,
    the last one naming who acted (``kb.actor``) when the knowledge base carries one."""
    when = when or datetime.now(UTC)
    if kb.actor is not None:
        lines = [*lines, f"by {kb.actor.label}"]
    stamp = when.isoformat(timespec="seconds")
    items = ["- " + " ".join(line.split()) for line in lines]
    section = "\n".join([f"## {stamp} {' '.join(title.split())}", "", *items]) + "\n"
    path = kb.log_path
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as f:
        end = f.seek(0, os.SEEK_END)
        if end == 0:
            prefix = LOG_HEADER
        else:
            f.seek(end - 1)
            prefix = "" if f.read(1) == b"\n" else "\n"
        f.write((prefix + "\n" + section).encode("utf-8"))
        f.flush()
        os.fsync(f.fileno())


def merge_logs(base: str, theirs: str, mine: str) -> str:
    """log.md as two writers left it from ``base``: ``theirs`` whole, with what ``mine``
    changed of ``base`` put in place where ``theirs`` kept those lines as they were, and
    what ``mine`` appended (or changed where ``theirs`` changed too) after ``theirs``.

    Lines are matched by position, not by text: a section ``mine`` added whose lines
    ``theirs`` also holds (the same article created again, the same person acting, the
    blank line before each heading) is kept whole, once."""
    b, t, m = (text.splitlines(keepends=True) for text in (base, theirs, mine))
    at: list[int | None] = [None] * (len(b) + 1)  # each base line's place in theirs
    for block in SequenceMatcher(None, b, t, autojunk=False).get_matching_blocks():
        for k in range(block.size):
            at[block.a + k] = block.b + k
    in_place: list[tuple[int, int, list[str]]] = []  # (at in theirs, lines replaced, by)
    after: list[str] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, b, m, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        new = m[j1:j2]
        if i2 == len(b) and len(new) > i2 - i1:  # base's last lines changed, then appended to
            new, appended = new[: i2 - i1], new[i2 - i1 :]
        else:
            appended = []
        kept = at[i1:i2] if i2 > i1 else at[i1 : i1 + 1]
        start = kept[0] if kept else None
        contiguous = start is not None and kept == list(range(start, start + len(kept)))
        if i1 < len(b) and contiguous:
            in_place.append((start, i2 - i1, new))
        else:
            after += new
        after += appended
    out = list(t)
    for start, count, lines in sorted(in_place, reverse=True):
        out[start : start + count] = lines
    if after and out and not out[-1].endswith("\n"):
        out[-1] += "\n"
    return "".join(out + after)
