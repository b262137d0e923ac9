"""Submit documents to the compile queue through the application layer: each task
records who submitted it, and the worker's commit compiling it has them as author."""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass
from typing import Any

from compiler.queue import TaskQueue
from kb_ai.service.opened import OpenKb
from wiki import open_state


@dataclass(frozen=True)
class Document:
    """One document to queue: its text (or a converted document's bytes) and names."""

    title: str
    content: bytes
    filename: str = ""
    kind: str = "note"
    origin: str | None = None
    revises: str = ""  # the id of the source it revises, as the sender said


def submit(okb: OpenKb, documents: Iterable[Document]) -> list[tuple[dict[str, Any], bool]]:
    """Spool and record each document for the worker; (task, created) for each, created
    False for a duplicate. Every document is on disk and in the task table on return."""
    out = []
    with closing(open_state(okb.kb)) as conn:
        queue = TaskQueue(okb.kb, conn)
        for doc in documents:
            out.append(
                queue.submit(
                    doc.title,
                    doc.content,
                    filename=doc.filename,
                    kind=doc.kind,
                    origin=doc.origin,
                    actor=okb.actor,
                    revises=doc.revises,
                )
            )
    okb.note("submit", f"{len(out)} document(s)")
    return out
