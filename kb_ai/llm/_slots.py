"""Slots at the model: at most ``size`` calls at once, and a freed slot's call sent first.

When a reply comes back, its slot goes to the next call waiting for one, and the reply's
reader goes on to check what the model wrote: milliseconds of CPU on the event loop for
each reply (grounding, links, parsing). The call given the slot needs the same loop to
put its request on the wire. Replies of calls sent together come back together: with 16
in flight, the 16th new request waited for the other fifteen replies to be checked, and
the model server sat idle meanwhile (issue 23: most of what a compile at 16 in flight
lost against its ideal time was lost there, round after round).

So a reader first lets every call that holds a slot send its request
(:meth:`Slots.sent_first`), waiting at most ``patience`` seconds, and the model works
while the replies are read. A transport tells the slot when its request is written (the
HTTP transport, from aiohttp's trace of the body sent); one that cannot say so is counted
as sent when it starts.

While calls still wait for a slot the reader waits too (again at most ``patience``):
a reply that comes back while another is being checked cannot give its slot away until
that check ends, and at 16 in flight the write stage's second round went out over 29 ms
where its first took 11, each reply's check holding back the next one's handover.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from contextvars import ContextVar

#: The ``sent`` callback of the call the current task makes (read by the HTTP transport).
on_sent: ContextVar[Callable[[], None] | None] = ContextVar("kb_ai_on_sent", default=None)


class Slots:
    """At most ``size`` calls at the model at once (one event loop's)."""

    def __init__(self, size: int, patience: float = 0.05) -> None:
        self._semaphore = asyncio.Semaphore(size)
        self.patience = patience
        self._unsent = 0  # calls holding a slot whose request is not written yet
        self._waiting = 0  # calls waiting for a slot
        self._settled = asyncio.Event()  # set when both are 0
        self._settled.set()

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[Callable[[], None]]:
        """Hold a slot for one call; yields ``sent``, to call once its request is
        written (called on leaving at the latest; calling it again does nothing)."""
        self._waiting += 1
        self._settled.clear()
        try:
            await self._semaphore.acquire()
        finally:
            self._waiting -= 1  # (cancelled while it waits: no longer waiting)
            self._settle()
        self._unsent += 1
        self._settled.clear()
        pending = True

        def sent() -> None:
            nonlocal pending
            if pending:
                pending = False
                self._unsent -= 1
                self._settle()

        token = on_sent.set(sent)
        try:
            yield sent
        finally:
            sent()
            self._semaphore.release()  # first: what follows may raise
            # A stream closed by the loop's finaliser runs this in another task's
            # context, where the token is not valid: the slot is given back all the same.
            with suppress(ValueError):
                on_sent.reset(token)

    def _settle(self) -> None:
        if not self._unsent and not self._waiting:
            self._settled.set()

    async def sent_first(self) -> None:
        """Return once every call holding a slot has sent its request and none waits for
        a slot (or after ``patience``): call after leaving a slot, before reading its
        reply."""
        # The call our slot went to runs first and counts itself as unsent.
        await asyncio.sleep(0)
        if self._unsent or self._waiting:
            with suppress(TimeoutError):
                await asyncio.wait_for(self._settled.wait(), self.patience)
