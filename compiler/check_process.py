"""The checks of model replies in a process of their own, beside the event loop.

A run's replies come back a round at a time, and each one's checks against its source
(extraction fidelity, the written article's review) are milliseconds of pure Python.
On the one thread that also sends every model call, they ran one reply after another
while the next calls waited to be sent; a thread does not help (the checks hold the
interpreter). A run of enough sources starts one helper process (compiler/_process.py)
and sends it each reply's check as plain data: texts, the extraction's fields. Until
it has started, and in a small run (which never starts it: a one-note compile would
wait for it longer than its checks take), the checks run in-process as before; the
verdicts are the same.

The helper is the run's: it stops with the run, at once when the run is interrupted.
Should it die, each check it held fails its source with a CheckProcessError (the run
goes on), and the checks after it run in-process. Each process has its own memo of
claims (kb_ai/grounding/claims.py): the run forgets both at its start.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import traceback
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import fields
from typing import Any

from compiler._process import Channel, helper_channel, start_helper, stop_helper
from kb_ai.errors import KbAiError

#: Sources a run needs before it starts the check process (below it, in-process).
MIN_SOURCES = 8


class CheckProcessError(KbAiError):
    """The check process stopped while it checked a reply: that source fails."""


class CheckCrashError(RuntimeError):
    """A check raised in the check process (a bug): raised in the caller, with the
    process's traceback, as it would be in-process."""


class CheckProcess:
    """The run's check process, started at once; :meth:`submit` hands it a check once
    it has said it is ready. Used from the event loop's thread only."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._process, self._conn = start_helper("compiler.check_process")
        self._pending: dict[int, tuple[asyncio.Future, str]] = {}
        self._next = 0
        self.ready = False
        self._started = asyncio.Event()  # set when it is ready, or gone
        self._dead = False
        self._released = False
        self._reader = threading.Thread(
            target=self._read, name="kb-ai check process reader", daemon=True
        )
        self._reader.start()

    @property
    def pid(self) -> int:
        return self._process.pid

    async def wait_ready(self) -> bool:
        """Wait until the process has started (or failed to); whether it is ready."""
        await self._started.wait()
        return self.ready and not self._dead

    def submit(self, what: str, job: Callable[..., Any], *args: Any) -> asyncio.Future | None:
        """The future of ``job(*args)`` run in the process; None while it is not ready
        (or gone): the caller runs the check itself. ``what``: the source, for an error."""
        if not self.ready or self._dead or self._released:
            return None
        self._next += 1
        future = self._loop.create_future()
        try:
            self._conn.send((self._next, job, args))
        except (OSError, ValueError):  # it died (its reader fails what it held)
            self._dead = True
            return None
        self._pending[self._next] = (future, what)
        return future

    def release(self) -> None:
        """No more checks: the process is asked to return (it ends while the run goes
        on; :meth:`close` then finds it ended). What comes after runs in-process."""
        if self._released:
            return
        self._released = True
        if self._pending:  # (a check still out: close kills it)
            return
        try:
            self._conn.send(None)
        except (OSError, ValueError):
            self._dead = True

    def close(self) -> int:
        """Stop the process: waited for when it was released with nothing pending,
        killed at once otherwise (an interrupted run); returns its exit code."""
        was_released = self._released and not self._pending and not self._dead
        if not was_released:
            self.release()
        kill = bool(self._pending) or self._dead or not was_released
        code = stop_helper(self._process, None, kill=kill)
        self._reader.join(5)
        self._conn.close()
        self._fail_pending(f"the check process was stopped (exit code {code})")
        return code

    # -- the reader thread -------------------------------------------------------------

    def _read(self) -> None:
        """Replies as they come, each handed to the loop; at the end, the process's."""
        while True:
            try:
                reply = self._conn.recv()
            except (EOFError, OSError):
                break
            self._call(self._arrived, reply)
        self._call(self._gone)

    def _call(self, fn: Callable[..., None], *args: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
            self._loop.call_soon_threadsafe(fn, *args)

    def _arrived(self, reply: tuple) -> None:
        if reply[0] == "ready":
            self.ready = True
            self._started.set()
            return
        job_id, kind, value = reply
        future, what = self._pending.pop(job_id, (None, ""))
        if future is None or future.done():  # its source was cancelled
            return
        if kind == "ok":
            future.set_result(value)
        else:
            future.set_exception(CheckCrashError(f"checking {what} failed:\n{value}"))

    def _gone(self) -> None:
        self._dead = True
        self._started.set()
        code = self._process.poll()
        self._fail_pending(f"the check process stopped (exit code {code})")

    def _fail_pending(self, why: str) -> None:
        pending, self._pending = self._pending, {}
        for future, what in pending.values():
            if not future.done():
                future.set_exception(
                    CheckProcessError(
                        f"{what}: {why} while checking the model's reply",
                        hint="compile it again; if it happens again, report it",
                    )
                )


_CURRENT: ContextVar[CheckProcess | None] = ContextVar("kb_ai_check_process", default=None)


@contextlib.contextmanager
def checks_beside(sources: int) -> Iterator[CheckProcess | None]:
    """For a run of ``sources``: its check process (None for a small run), used by the
    checks awaited within the block (and the tasks started in it); stopped at its end."""
    if sources < MIN_SOURCES:
        yield None
        return
    try:
        process = CheckProcess()
    except OSError:  # no process to be had (limits): the checks run in-process
        yield None
        return
    token = _CURRENT.set(process)
    try:
        yield process
    finally:
        _CURRENT.reset(token)
        process.close()


def current_check_process() -> CheckProcess | None:
    """The check process of the run this is called in, if it has one."""
    return _CURRENT.get()


def release_checks() -> None:
    """The run has no more replies to check: its check process may end now."""
    process = _CURRENT.get()
    if process is not None:
        process.release()


async def run_check(what: str, job: Callable[..., Any], *args: Any) -> Any:
    """``job(*args)``, in the run's check process when there is one ready to take it,
    else here. ``job`` is a module-level function of plain data (it is pickled)."""
    process = _CURRENT.get()
    future = process.submit(what, job, *args) if process is not None else None
    if future is None:
        return job(*args)
    return await future


# -- the checks, as functions of plain data --------------------------------------------


def extraction_fields(ex: Any) -> dict[str, Any]:
    """An Extraction's fields as plain data (what the check process is sent)."""
    return {f.name: getattr(ex, f.name) for f in fields(ex)}


def checked_extraction(
    data: dict[str, Any], source: str, chunks: int, restore: bool
) -> dict[str, Any]:
    """compiler.fidelity.check_extraction of an extraction given by its fields; the
    checked extraction's fields."""
    from compiler.extraction import Extraction
    from compiler.fidelity import check_extraction

    ex = check_extraction(Extraction(**data), source, chunks=chunks, restore=restore)
    return extraction_fields(ex)


def reviewed_reply(
    body: str,
    evidence: list[str],
    material: list[str],
    previous: str,
    title: str,
    draft: tuple[bool, int | None, str],
    summary: object,
) -> tuple[Any, str | None, str | None]:
    """A written article's checks (compiler.checks): its review, and its summary
    accepted or the problem with it. ``evidence``: the texts the article may state
    besides its previous text and title; ``draft``: (truncated, bound, told)."""
    from compiler.checks import accept_summary, evidence_for, review_body

    truncated, bound, told = draft
    index = evidence_for(evidence, previous, title)
    review = review_body(body, evidence=index, material=material, previous=previous,
                         truncated=truncated, bound=bound, told=told)  # fmt: skip
    return (review, *accept_summary(summary, review.body, index))


def serve(read_fd: int, write_fd: int) -> None:
    """The check process: checks in the order sent, until told to stop. The jobs are
    read as they come (a thread), so the caller's sends never wait on a check."""
    import queue

    import compiler.checks  # noqa: F401 - the checks' imports paid before "ready"
    import compiler.extraction  # noqa: F401
    import compiler.fidelity  # noqa: F401

    conn: Channel = helper_channel(read_fd, write_fd)
    jobs: queue.SimpleQueue = queue.SimpleQueue()

    def take() -> None:
        while True:
            try:
                job = conn.recv()
            except (EOFError, OSError):
                job = None
            jobs.put(job)
            if job is None:
                return

    threading.Thread(target=take, daemon=True).start()
    conn.send(("ready",))
    while (job := jobs.get()) is not None:
        job_id, fn, args = job
        try:
            conn.send((job_id, "ok", fn(*args)))
        except Exception:  # noqa: BLE001 - not swallowed: raised in the caller, traceback and all
            conn.send((job_id, "crash", traceback.format_exc()))
