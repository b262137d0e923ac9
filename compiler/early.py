"""The first sources of a run read, and their extractions asked for, before the run's
setup.

A run that takes a free compile lock first records itself, brings in the wiki remote's
commits, settles a killed run and freezes the categories: 7.5 ms of the event loop's
time quiet, twice that on a loaded machine, before the first model call (issue 23).
None of it changes what a new source's extraction asks, so the first sources (as many
as the model's slots) are read and asked for first, and the setup runs while the model
works. The extract stage takes what was read here only when nothing it depends on
changed meanwhile: the sources state.db knows, and the mode (a small model's naming
prompt lists the categories). Otherwise the calls are dropped (a reply that came is in
the response cache) and the stage reads and asks as it always does.

Not with a shared database: there a run claims an extraction before asking for it
(compiler/claims.py), which the stage does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from compiler._tasks import Interruptible, run_io
from compiler.allocate import is_new
from compiler.mode import ComposedArticles
from compiler.sources import Source
from compiler.state import Pending, RunState, Skipped, Unread
from kb_ai.errors import KbAiError
from kb_ai.llm import LLM

Read = Source | Skipped | KbAiError  # what reading a pending item gave


@dataclass
class Early:
    """What was read and asked for before the setup, by origin."""

    known: Mapping[str, Any]  # the sources state.db knew when they were read
    mode: ComposedArticles
    read: dict[str, tuple[Read, asyncio.Future | None]] = field(default_factory=dict)

    def usable(self, known: Mapping[str, Any], mode: ComposedArticles) -> bool:
        """Whether the stage may take these reads and calls as its own."""
        same_mode = (
            type(mode) is type(self.mode)
            and mode.version == self.mode.version
            and mode.categories == self.mode.categories
        )
        return same_mode and (known is self.known or known == self.known)

    def take(self, origin: str) -> tuple[Read, asyncio.Future | None] | None:
        return self.read.pop(origin, None)

    def drop(self) -> None:
        """Every call not taken: cancelled, or its outcome taken (:func:`drop_call`)."""
        for _, asked in self.read.values():
            drop_call(asked)
        self.read.clear()


def worth_asking(src: Source, known: Mapping[str, Any], checksums: set[str]) -> bool:
    """Whether a source just read is asked for before it has a slug: one seen for the
    first time, and not a second copy of a text this run read already (recorded as the
    first). A source compiled or tried before may have an extraction to reuse."""
    return is_new(src, known) and src.checksum not in checksums


async def read_early(
    llm: LLM, mode: ComposedArticles, tasks: Interruptible, state: RunState, count: int
) -> Early:
    """The first ``count`` pending items read, each new source's extraction asked for."""
    early = Early(state.known, mode)
    checksums: set[str] = set()
    for item in state.pending[:count]:
        if tasks.interrupted:
            break
        src = await read_item(item, state.known)  # (a failure: the stage reports it)
        asked = None
        if isinstance(src, Source):
            if worth_asking(src, state.known, checksums):
                asked = tasks.spawn(mode.extract(llm, src))
            checksums.add(src.checksum)
        early.read[item.origin] = (src, asked)
    return early


async def read_item(item: Pending, known: Mapping[str, Any]) -> Read:
    """``item`` read (intake's deferred read, compiler/intake.py); what could not be read
    as the KbAiError that says why."""
    if not isinstance(item, Unread):
        return item
    try:
        return await run_io(item.read, known)
    except KbAiError as exc:
        return exc


def drop_call(asked: asyncio.Future | None) -> None:
    """An early call not used: cancelled if still under way, and a failure it ended
    with taken, so that nothing reports it (its reply, if it came, was cached)."""
    if asked is None:
        return
    if not asked.done():
        asked.cancel()
    elif not asked.cancelled():
        asked.exception()
