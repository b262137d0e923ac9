"""The compile workers of a server: a bounded pool on a thread of its own.

Compiling does blocking work (SQLite, files, git subprocesses) between model calls, so
the workers run on their own event loop in one background thread, and a long compile
never stalls a page or a chat stream. A worker that is stopped commits what it finished
and hands its other leased tasks back to the queue; one that dies leaves leases that the
next server takes over at once (compiler/queue.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from contextlib import closing

from compiler.queue import TaskQueue
from kb_ai.service import OpenKb, compiling
from kb_ai.service.compiling import Worker
from wiki import open_state

log = logging.getLogger(__name__)


class WorkerPool:
    """``size`` queue workers. One compile per knowledge base runs at a time (a file
    lock); each compile takes a batch of tasks and runs their model calls in parallel."""

    def __init__(
        self,
        okb: OpenKb,
        *,
        size: int = 1,
        poll_seconds: float = 1.0,
        lease_seconds: float = 600.0,
    ) -> None:
        self.okb = okb  # through the application layer, as its actor (see compiling.worker)
        self.kb = okb.kb
        self.size = max(1, size)
        self.poll_seconds = poll_seconds
        self.lease_seconds = lease_seconds
        self.workers: list[Worker] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._main: asyncio.Task | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kb-ai-workers", daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._ready.wait(timeout=10)

    def wake(self) -> None:
        """Tell idle workers that a task was queued (safe from any thread)."""
        if self._loop is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop just stopped
                self._loop.call_soon_threadsafe(self._wake_all)

    def stop(self, grace: float = 20.0) -> None:
        """Stop as Ctrl-C stops `kb-ai compile` (the server's SIGINT and SIGTERM end here):
        a compile in progress cancels its model calls, commits what it finished and hands
        the rest of its tasks back to the queue. One that has not ended after ``grace``
        seconds is cancelled outright."""
        if self._loop is None or not self._thread.is_alive():
            return
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._stop_all)
        self._thread.join(grace)
        if self._thread.is_alive() and self._main is not None:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._main.cancel)
            self._thread.join(30)

    # -- on the pool's thread ---------------------------------------------------------------

    def _run(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._main = asyncio.current_task()
        self.workers = [
            compiling.worker(
                self.okb, poll_seconds=self.poll_seconds, lease_seconds=self.lease_seconds
            )
            for _ in range(self.size)
        ]
        self._ready.set()
        runs = [asyncio.create_task(self._keep_running(w)) for w in self.workers]
        try:
            await asyncio.gather(*runs)
        except asyncio.CancelledError:
            for run in runs:
                run.cancel()
            await asyncio.gather(*runs, return_exceptions=True)

    async def _keep_running(self, worker: Worker) -> None:
        """A worker whose loop fails unexpectedly (a locked database, a full disk) fails
        the tasks it held with the reason, logs it, and starts again after a pause, so the
        server keeps compiling and no task waits out its lease."""
        while not worker.stopping:
            try:
                await worker.run_forever()
            except Exception as exc:
                log.exception("compile worker failed; restarting it in 5 s")
                self._fail_held(worker.owner, f"the compile failed: {type(exc).__name__}: {exc}")
                await asyncio.sleep(5)

    def _fail_held(self, owner: str, error: str) -> None:
        with closing(open_state(self.kb)) as conn:
            queue = TaskQueue(self.kb, conn)
            for task in queue.list(limit=10_000):
                if task["state"] == "running" and task["lease_owner"] == owner:
                    queue.finish(task["id"], error=error)

    def _wake_all(self) -> None:
        for worker in self.workers:
            worker.wake.set()

    def _stop_all(self) -> None:
        for worker in self.workers:
            worker.stop()
