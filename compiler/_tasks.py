"""Running a stage's work concurrently, and stopping it cleanly on Ctrl-C."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Awaitable, Callable, Iterable
from contextlib import suppress
from typing import Any

from kb_ai.errors import KbAiError

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interruptible:
    """Runs coroutines side by side; Ctrl-C, SIGTERM or interrupt() cancels what is in
    flight, and what finished stays finished."""

    def __init__(self) -> None:
        self.interrupted = False
        self._live: list[asyncio.Task] = []

    async def run_all(self, coros: Iterable[Awaitable[None]]) -> list[Any]:
        """Run concurrently; each outcome is None, the KbAiError raised, or CANCELLED."""
        return await self.collect([self.spawn(c) for c in coros])

    async def run_paced(self, coros: Iterable[Awaitable[None]], paced: int) -> list[Any]:
        """As :meth:`run_all`, the first ``paced`` started one turn of the event loop
        apart (the calls the model's slots take at once), the rest together after them.

        Each of them builds its request and starts sending it, and on Python 3.11 aiohttp
        writes a request in a task of its own, which runs a turn later: started together,
        every coroutine built its request before the first one went out (at the write
        stage, 37 prompts, 7 ms quiet, before the first byte reached the model)."""
        tasks = []
        for i, coro in enumerate(coros):
            tasks.append(self.spawn(coro))
            if i < paced:
                await asyncio.sleep(0)
        return await self.collect(tasks)

    def spawn(self, coro: Awaitable[None]) -> asyncio.Future:
        """Start ``coro`` now; an interrupt cancels it like the rest (at once if it came first)."""
        task = asyncio.ensure_future(coro)
        if self.interrupted:
            task.cancel()
        self._live.append(task)
        return task

    async def collect(self, tasks: list[asyncio.Future]) -> list[Any]:
        """Wait for spawned tasks; their outcomes as :meth:`run_all` gives them."""
        if tasks:
            await asyncio.wait(tasks)
        done = set(tasks)
        self._live = [t for t in self._live if t not in done]
        outcomes: list[Any] = []
        for t in tasks:
            if t.cancelled():
                outcomes.append(CANCELLED)
            elif isinstance(t.exception(), KbAiError):
                outcomes.append(t.exception())
            elif t.exception() is not None:
                raise t.exception()  # a bug, not a model or input failure: let it surface
            else:
                outcomes.append(None)
        return outcomes

    def interrupt(self) -> None:
        """Stop: cancel what is in flight."""
        self.interrupted = True
        for t in self._live:
            t.cancel()
        self.remove_handler()  # a second Ctrl-C stops at once

    def install_handler(self) -> None:
        """Ctrl-C, and SIGTERM (what `docker stop` and service managers send), interrupt."""
        if threading.current_thread() is threading.main_thread():
            for sig in STOP_SIGNALS:
                with suppress(NotImplementedError, RuntimeError):
                    asyncio.get_running_loop().add_signal_handler(sig, self.interrupt)

    def remove_handler(self) -> None:
        if threading.current_thread() is threading.main_thread():
            for sig in STOP_SIGNALS:
                with suppress(NotImplementedError, RuntimeError):
                    asyncio.get_running_loop().remove_signal_handler(sig)


async def run_io(fn: Callable[..., Any], *args: Any) -> Any:
    """Run file work in a thread, off the event loop. Once started it is finished even if
    the run is interrupted meanwhile: the model's work it stores is already paid for, and a
    file must never be on disk without the run knowing."""
    task = asyncio.ensure_future(asyncio.to_thread(fn, *args))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        await task
        raise


class _Cancelled:
    def __repr__(self) -> str:
        return "<cancelled>"


CANCELLED = _Cancelled()


class Stager:
    """Stages files in git in the background while a run goes on, one ``git add`` at a
    time (two at once would fight over git's index), so that the commit at its end
    finds most objects written. Staging is best effort: the commit stages everything."""

    def __init__(
        self,
        stage: Callable[[list[str]], None],
        after: asyncio.Future | None = None,
        worth: Callable[[], bool] = lambda: True,
    ) -> None:
        """``after``: git work of the run's own that must be done before any staging
        (what it raises is its owner's to report; the stager only waits for it).
        ``worth``: asked before each ``git add``; when it says no, what is pending is
        left to the commit (staging helps only while there is other waiting to hide it in)."""
        self._stage = stage
        self._after = after
        self._worth = worth
        self._pending: list[str] = []
        self._wake = asyncio.Event()
        self._closing = False
        self._task: asyncio.Task | None = None

    def add(self, *paths: str) -> None:
        self._pending.extend(paths)
        self._wake.set()
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        if self._after is not None:
            await asyncio.wait([self._after])
        while not self._closing:
            await self._wake.wait()
            self._wake.clear()
            batch, self._pending = self._pending, []
            if batch and not self._closing and self._worth():
                with suppress(Exception):  # best effort, see above
                    await run_io(self._stage, batch)

    async def close(self) -> None:
        """Stop: wait for a ``git add`` under way (the commit would wait for git's index
        anyway); what is still pending is left to the commit, which stages everything."""
        self._closing = True
        self._wake.set()
        if self._task is not None:
            await asyncio.shield(self._task)
