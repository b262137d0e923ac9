"""The queue's worker: claims queued tasks in batches and compiles each batch in one run
(one git commit), through the same pipeline as `kb-ai compile`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing
from functools import partial
from typing import Any

from compiler.captures import release_orphans, retry_due, take_spool
from compiler.documents import convert_process, format_of
from compiler.identity_index import Arrival
from compiler.intake import read_task
from compiler.queue import TaskQueue, hold_owner, keep_owner, release_owner, task_actor
from compiler.run import Compiler
from compiler.sources import Source
from kb_ai.errors import KbAiError, StorageError
from kb_ai.hooks import spool
from kb_ai.hooks.run import STARTING, announce_worker, withdraw_worker
from kb_ai.llm import LLM, open_llm
from kb_ai.settings import Settings
from wiki import KnowledgeBase, all_sources, open_state
from wiki.database import Hold, shared_database
from wiki.lock import KbLock

log = logging.getLogger(__name__)

#: With LISTEN/NOTIFY waking the worker, how often it looks anyway (expired leases).
LISTEN_POLL_SECONDS = 5.0


def member_name(origin: str) -> str:
    """The member of an archive a source came from ("bundle.zip#docs/a.pdf" -> "docs/a.pdf")."""
    return origin.rsplit("#", 1)[-1]


def by_actor(tasks: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The tasks grouped by who submitted them, in the order each was first claimed."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for task in tasks:
        groups.setdefault(repr(task.get("actor")), []).append(task)
    return list(groups.values())


def arrivals_of(tasks: list[dict[str, Any]], by_origin: dict[str, list[str]]) -> dict[str, Arrival]:
    """By origin: the file name each submitted source came under (an archive member's
    is in its origin) and the source its sender said it revises (compiler/identity.py)."""
    task_of = {t["id"]: t for t in tasks}
    out = {}
    for origin, ids in by_origin.items():
        task = task_of[ids[-1]]
        name = "" if "#" in origin else task["filename"]
        out[origin] = Arrival(name=name, revises=task.get("revises") or "")
    return out


def identity_notes(result: Any, origins: list[str]) -> list[str]:
    """What the run found of these sources' identity, in words for Status."""
    mine = set(origins)
    notes = [f"revised {r.raw_path} ({r.way})" for r in result.revisions if r.origin in mine]
    for m in result.maybe_revisions:
        if m.origin in mine:
            raw, score = m.candidates[0]
            ident = raw.removeprefix("raw/").removesuffix(".md")
            notes.append(
                f"compiled as a new source, {m.raw_path}; it may revise {raw} (similarity "
                f"{score:.2f}): if it does, submit it again with This revises: {ident}"
            )
    return notes


class Worker:
    """Compiles queued tasks until stopped. One per server; batches make runs efficient."""

    def __init__(
        self,
        kb: KnowledgeBase,
        settings: Settings,
        *,
        llm_factory: Callable[..., LLM] = open_llm,
        batch: int = 16,
        poll_seconds: float = 0.5,
        lease_seconds: float = 600.0,
        owner: str | None = None,
    ) -> None:
        self.kb = kb
        self.settings = settings
        self.llm_factory = llm_factory
        self.batch = batch
        self.poll_seconds = poll_seconds
        self.lease_seconds = lease_seconds
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self.wake = asyncio.Event()
        self.stopping = False
        self.spool_due: float | None = None  # when the spool's waiting sessions are due
        self._compiler: Compiler | None = None  # the compile under way, if any
        self._owner_lock: KbLock | Hold | None = None  # held while it lives (_alive)

    async def run_forever(self) -> None:
        with self._alive(), self._listening() as poll:
            while not self.stopping:
                await asyncio.to_thread(self._retry_failed)
                done = await self.run_once()
                if not done:
                    self.wake.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.wake.wait(), poll)

    @contextlib.contextmanager
    def _listening(self) -> Iterator[float]:
        """With a shared database, a NOTIFY on each task submitted, retried or handed back
        wakes this worker (on any machine), so it looks every few seconds only for leases
        that expired; yields how long to wait between looks."""
        db = shared_database(self.kb)
        if db is None:
            yield self.poll_seconds
            return
        loop = asyncio.get_running_loop()
        listener = db.listen(lambda: loop.call_soon_threadsafe(self.wake.set))
        try:
            yield max(self.poll_seconds, LISTEN_POLL_SECONDS)
        finally:
            listener.stop()

    async def drain(self) -> int:
        """Compile until the queue and the spool are empty (waiting for a still-active
        session to be quiet first); returns the number of tasks handled."""
        total = 0
        while not self.stopping:
            with self._alive():
                # once, not every batch: what fails in this drain waits for its backoff
                await asyncio.to_thread(self._retry_failed)
                while not self.stopping:
                    done = await self.run_once()
                    total += done
                    if done:
                        continue
                    if self.spool_due is None:
                        break
                    await asyncio.sleep(min(max(self.spool_due - time.time(), 0.05), 60.0))
            # a hook that saw this worker alive just before it let go started none
            if not spool.pending(self.kb.state_dir):
                break
        return total

    def _take_spool(self) -> None:
        """Agent captures from the spool into the queue."""
        with closing(open_state(self.kb)) as conn:
            self.spool_due = take_spool(self.kb, conn, self.settings).next_at

    def _retry_failed(self) -> None:
        """Failed captures whose backoff passed back into the queue, and tasks left
        running by a worker process that died (killed, crashed) handed back at once."""
        with closing(open_state(self.kb)) as conn:
            retry_due(self.kb, conn, self.settings)
            release_orphans(self.kb, conn)

    @contextlib.contextmanager
    def _alive(self) -> Iterator[None]:
        """Hold the KB's worker lock (shared) while running, so agent hooks can tell that
        someone will compile what they queue, and this worker's own lock, so that if it
        dies the next worker takes its tasks at once (see queue.hold_owner)."""
        lock = KbLock(self.kb.state_dir / "worker.lock")
        lock.acquire(shared=True)
        named = announce_worker(self.kb.state_dir)  # the shell hook's quick look
        (self.kb.state_dir / STARTING).unlink(missing_ok=True)  # started: hooks see the lock
        try:
            mine = hold_owner(self.kb, self.owner)
            self._owner_lock = mine
            try:
                yield
            finally:
                self._owner_lock = None
                release_owner(self.kb, self.owner, mine)
        finally:
            withdraw_worker(self.kb.state_dir, named)  # before the drain's last look
            lock.release()

    async def run_once(self) -> int:
        """Claim and compile one batch; returns the number of tasks handled."""
        await asyncio.to_thread(self._take_spool)
        await asyncio.to_thread(self._keep_owner)
        with closing(open_state(self.kb)) as conn:
            tasks = TaskQueue(self.kb, conn).claim(
                self.owner, limit=self.batch, lease_seconds=self.lease_seconds
            )
        if not tasks:
            return 0
        ids = [t["id"] for t in tasks]
        renew = asyncio.create_task(self._renew(ids))
        try:
            for group in by_actor(tasks):  # one run, one commit, per author
                await self._compile(group)
        except asyncio.CancelledError:
            with closing(open_state(self.kb)) as conn:
                TaskQueue(self.kb, conn).release(ids, self.owner)
            raise
        finally:
            renew.cancel()
        return len(tasks)

    async def _compile(self, tasks: list[dict[str, Any]]) -> None:
        sources: list[Source] = []
        by_origin: dict[str, list[str]] = {}
        # the members of a submitted archive that were left out, each with why, by task
        left_out: dict[str, list[dict[str, str]]] = {}
        with (
            closing(open_state(self.kb)) as conn,
            convert_process(self.settings) as converter,  # one process for the batch
        ):
            queue = TaskQueue(self.kb, conn)
            known = all_sources(conn)
            for task in tasks:
                try:  # the one intake (compiler/intake.py); conversion takes a while
                    found = await asyncio.to_thread(
                        read_task,
                        task,
                        queue.read_content(task["id"]),
                        self.settings,
                        known,
                        converter,
                    )
                except KbAiError as exc:
                    queue.finish(task["id"], error=str(exc), owner=self.owner)
                    continue
                if found.skipped:  # an agent session with nothing new
                    queue.finish(task["id"], result={"skipped": found.skipped}, owner=self.owner)
                    continue
                if found.left_out:
                    left_out[task["id"]] = [
                        {"source": member, "error": error} for member, error in found.left_out
                    ]
                for src in found.sources:
                    if src.origin not in by_origin:
                        sources.append(src)
                    by_origin.setdefault(src.origin, []).append(task["id"])
        if not sources:
            return
        ids = [i for group in by_origin.values() for i in group]

        def progress(event: str, **data: Any) -> None:
            if event == "stage":
                with closing(open_state(self.kb)) as conn:
                    TaskQueue(self.kb, conn).set_stage(ids, data["name"], self.owner)

        # On Status: a batch of agent sessions came from hooks, anything else was submitted.
        hooked = all(str(t.get("origin") or "").startswith("session:") for t in tasks)
        compiler = Compiler(
            self.kb.acting_as(task_actor(tasks[0]) or self.kb.actor),  # the commit's author
            self.settings,
            llm_factory=self.llm_factory,
            progress=progress,
            started_by="agent hook" if hooked else "web",
            guard=partial(self._still_mine, ids),
        )
        self._compiler = compiler
        if self.stopping:
            compiler.interrupt()
        try:
            result = await compiler.compile_sources(sources, arrivals=arrivals_of(tasks, by_origin))
        except StorageError:  # not the batch's fault: the pool hands its tasks back
            raise
        except KbAiError as exc:  # e.g. no model configured: every task of the batch says why
            with closing(open_state(self.kb)) as conn:
                queue = TaskQueue(self.kb, conn)
                for task_id in ids:
                    queue.finish(task_id, error=str(exc), owner=self.owner)
            return
        finally:
            self._compiler = None
        failed = {f.source: f.error for f in result.failed}
        summary = {"created": result.created, "updated": result.updated, "commit": result.commit}
        if result.review:  # held: its tasks keep their copies until the run is approved
            summary["review"] = result.review
        if result.held:  # articles whose update meets a hand edit: Status says they wait
            summary |= {"held": result.held, "held_review": result.held_review}
        origins: dict[str, list[str]] = {}  # task id -> its sources (an archive: several)
        archives = {t["id"] for t in tasks if format_of(t["filename"]) == "zip"}
        for origin, task_ids in by_origin.items():
            for task_id in task_ids:
                origins.setdefault(task_id, []).append(origin)
        with closing(open_state(self.kb)) as conn:
            queue = TaskQueue(self.kb, conn)
            for task_id, mine in origins.items():
                bad = [o for o in mine if o in failed]
                if result.interrupted and bad:  # stopped, not failed: next time
                    queue.release([task_id], self.owner)
                    continue
                members = left_out.get(task_id, []) + [
                    {"source": member_name(o), "error": f"{member_name(o)}: {failed[o]}"}
                    for o in bad
                    if task_id in archives
                ]
                outcome = {**summary, "failed": members} if members else summary
                if notes := identity_notes(result, mine):
                    outcome = {**outcome, "identity": notes}
                if len(bad) < len(mine):  # something of it compiled: done, saying what did not
                    queue.finish(task_id, result=outcome, owner=self.owner)
                    continue
                error = "; ".join(m["error"] for m in members) if members else failed[bad[0]]
                queue.finish(task_id, error=error, result=outcome, owner=self.owner)

    def _keep_owner(self) -> None:
        """This worker's lock taken again if a database restart freed it (the listener
        wakes the worker when the database is back, so it is soon), before it claims."""
        if self._owner_lock is not None:
            keep_owner(self.kb, self.owner, self._owner_lock)

    def _still_mine(self, ids: list[str]) -> None:
        """The compile's guard, before it records anything: every task of the batch is
        still this worker's. Its lock lost (a database restart), another worker may have
        taken them, thinking it dead: then this run stops (its articles put back), and
        that worker compiles them, so none is done twice."""
        self._keep_owner()
        with closing(open_state(self.kb)) as conn:
            taken = TaskQueue(self.kb, conn).taken_from(ids, self.owner)
        if taken:
            raise StorageError(
                f"{len(taken)} task(s) of this compile ({', '.join(taken[:3])}) were taken"
                " by another worker while this one's database connection was away; the run"
                " stopped before recording anything and put its articles back",
                path="tasks",
                cause="io",
                transient=True,
                hint="nothing to do: the other worker compiles them",
            )

    async def _renew(self, ids: list[str]) -> None:
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            with closing(open_state(self.kb)) as conn:
                TaskQueue(self.kb, conn).renew(ids, self.owner, lease_seconds=self.lease_seconds)

    def stop(self) -> None:
        """Stop as Ctrl-C stops `kb-ai compile`: a compile under way cancels its model calls,
        keeps and commits what it finished, and hands the rest back to the queue."""
        self.stopping = True
        self.wake.set()
        if self._compiler is not None:
            self._compiler.interrupt()
