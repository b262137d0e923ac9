"""The log: log.md, an append-only record of what each compile run did."""

from __future__ import annotations

import os
from datetime import UTC, datetime

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
