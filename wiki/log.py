"""The log: log.md, an append-only record of what each compile run did."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wiki.layout import KnowledgeBase

LOG_HEADER = "# kb-ai log\n\nWhat each compile run did, oldest first.\n"


def append_log(
    kb: KnowledgeBase, title: str, lines: list[str], when: datetime | None = None
) -> None:
    """Append a ``## <timestamp> <title>`` section with ``lines`` as list items to log.md."""
    when = when or datetime.now(UTC)
    stamp = when.isoformat(timespec="seconds")
    items = ["- " + " ".join(line.split()) for line in lines]
    section = "\n".join([f"## {stamp} {' '.join(title.split())}", "", *items]) + "\n"
    path = kb.log_path
    path.parent.mkdir(parents=True, exist_ok=True)
    existing = path.read_bytes() if path.exists() else b""
    prefix = "" if existing else LOG_HEADER
    if existing and not existing.endswith(b"\n"):
        prefix = "\n"
    with open(path, "a", encoding="utf-8", newline="") as f:
        f.write(prefix + "\n" + section)
        f.flush()
        os.fsync(f.fileno())
