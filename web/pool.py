"""The compile workers of a server: a bounded pool on a thread of its own.

Compiling does blocking work (SQLite, files, git subprocesses) between model calls, so
the workers run on their own event loop in one background thread, and a long compile
never stalls a page or a chat stream. A worker that is stopped commits what it finished
and hands its other leased tasks back to the queue; one that dies leaves leases that the
next server takes over at once (compiler/queue.py).

Storage faults (a full disk, a corrupted or read-only state.db) never end a worker: it
waits, with a backoff, and tries again; the tasks it held go back to the queue once the
database takes writes again. :meth:`WorkerPool.health` says what each worker is doing,
and starts the pool's thread again should it have ended (see web/health.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from contextlib import closing
from dataclasses import dataclass

from compiler.queue import TaskQueue
from kb_ai.errors import DatabaseAwayError, StorageError
from kb_ai.service import OpenKb, compiling
from kb_ai.service.compiling import Worker
from wiki import open_state

log = logging.getLogger(__name__)


@dataclass
class WorkerState:
    """What one worker is doing, as the pool sees it (read from other threads)."""

    running: bool = False  # inside its loop; False while it waits to try again
    failures: int = 0  # failures in a row (each within max_retry_seconds of the last try)
    error: str | None = None  # the last failure, while it lasts
    retry_at: float | None = None  # time.time() of the next attempt, while waiting


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
        retry_seconds: float = 1.0,
        max_retry_seconds: float = 60.0,
        batch: int | None = None,
    ) -> None:
        self.okb = okb  # through the application layer, as its actor (see compiling.worker)
        self.kb = okb.kb
        self.size = max(1, size)
        self.poll_seconds = poll_seconds
        self.lease_seconds = lease_seconds
        self.retry_seconds = retry_seconds
        self.max_retry_seconds = max(retry_seconds, max_retry_seconds)
        self.batch = batch  # tasks a compile claims (None: the worker's default)
        self.workers: list[Worker] = []
        self.states: dict[str, WorkerState] = {}
        self.restarts = 0  # times the pool's thread had ended and was started again
        self._stopped = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._main: asyncio.Task | None = None
        self._ready = threading.Event()
        self._restarting = threading.Lock()
        self._thread = self._new_thread()

    def _new_thread(self) -> threading.Thread:
        return threading.Thread(target=self._run, name="kb-ai-workers", daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._ready.wait(timeout=10)

    def alive(self) -> bool:
        return self._thread.is_alive()

    def health(self) -> dict[str, object]:
        """The workers as /healthz reports them. A pool whose thread ended without being
        stopped (it never should) is started again here, and says so."""
        restarted = False
        with self._restarting:  # two health checks at once start one thread
            if not self._stopped and not self._thread.is_alive():
                log.error("the compile workers' thread had ended; starting it again")
                self.restarts += 1
                self._ready.clear()
                self._thread = self._new_thread()
                self.start()
                restarted = True
        now = time.time()
        workers = [
            {
                "running": state.running,
                "failures": state.failures,
                "error": state.error,
                "retry_in": None if state.retry_at is None else max(0.0, state.retry_at - now),
            }
            for state in list(self.states.values())
        ]
        return {
            "size": self.size,
            "alive": sum(1 for w in workers if w["running"]) if self.alive() else 0,
            "thread": self.alive(),
            "restarted": restarted,
            "restarts": self.restarts,
            "workers": workers,
        }

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
        self._stopped = True
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
                self.okb,
                poll_seconds=self.poll_seconds,
                lease_seconds=self.lease_seconds,
                **({} if self.batch is None else {"batch": self.batch}),
            )
            for _ in range(self.size)
        ]
        self.states = {w.owner: WorkerState() for w in self.workers}
        self._ready.set()
        runs = [asyncio.create_task(self._keep_running(w)) for w in self.workers]
        try:
            await asyncio.gather(*runs)
        except asyncio.CancelledError:
            for run in runs:
                run.cancel()
            await asyncio.gather(*runs, return_exceptions=True)

    async def _keep_running(self, worker: Worker) -> None:
        """Run ``worker`` until it is stopped, whatever fails: nothing ends this loop but
        a stop. After a failure the worker settles the tasks it held (a storage fault
        hands them back to the queue, since they are not at fault; anything else fails
        them with the reason) and starts again after a pause that doubles with each
        failure in a row, up to ``max_retry_seconds``. Settling needs the database too:
        while it fails, the worker waits and tries again, and no task waits out its
        lease once the database is back."""
        state = self.states[worker.owner]
        unsettled: tuple[bool, str] | None = None  # (storage fault?, error) to settle
        while not worker.stopping:
            started = time.monotonic()
            away = False  # the shared database did not answer (said once elsewhere)
            try:
                if unsettled is not None:
                    await asyncio.to_thread(self._settle_held, worker.owner, *unsettled)
                    unsettled = None
                state.running, state.retry_at, state.error = True, None, None
                await worker.run_forever()
                continue
            except StorageError as exc:
                # the shared database away: said once by the database itself (one line
                # when it goes, one when it is back), not again at every try here
                away = isinstance(exc, DatabaseAwayError)
                log.log(logging.DEBUG if away else logging.WARNING, "compile worker: %s", exc)
                error = str(exc)
                unsettled = unsettled or (True, f"the compile stopped: {exc}")
            except Exception as exc:  # a bug or an unforeseen fault: logged whole, survived
                log.exception("compile worker failed")
                error = f"{type(exc).__name__}: {exc}"
                unsettled = unsettled or (False, f"the compile failed: {error}")
            state.running, state.error = False, error
            if time.monotonic() - started > self.max_retry_seconds:
                state.failures = 0  # it had run well for a while: a new run of failures
            state.failures += 1
            pause = min(self.retry_seconds * 2 ** (state.failures - 1), self.max_retry_seconds)
            state.retry_at = time.time() + pause
            log.log(logging.DEBUG if away else logging.WARNING,
                    "compile worker: trying again in %.0f s", pause)  # fmt: skip
            worker.wake.clear()
            with contextlib.suppress(TimeoutError):  # a stop wakes it at once
                await asyncio.wait_for(worker.wake.wait(), pause)
        state.running = False

    def _settle_held(self, owner: str, storage: bool, error: str) -> None:
        """The tasks ``owner`` held when its loop failed: back to the queue after a
        storage fault, failed with ``error`` otherwise."""
        with closing(open_state(self.kb)) as conn:
            queue = TaskQueue(self.kb, conn)
            held = [
                task["id"]
                for task in queue.list(limit=10_000)
                if task["state"] == "running" and task["lease_owner"] == owner
            ]
            if storage:
                queue.release(held, owner)
                return
            for task_id in held:
                queue.finish(task_id, error=error, owner=owner)

    def _wake_all(self) -> None:
        for worker in self.workers:
            worker.wake.set()

    def _stop_all(self) -> None:
        for worker in self.workers:
            worker.stop()
