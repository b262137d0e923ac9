"""One compile run: intake -> extract -> classify -> plan -> write -> index -> commit,
recorded for Status, ending in one git commit. Its sources are read and extracted
first (compiler/ahead.py); the rest runs under the knowledge base's compile lock.

The stages live in compiler/stages.py and pass one RunState (compiler/state.py) from
one to the next; this module holds the run around them. Ctrl-C cancels what is in
flight and commits what finished.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import closing, suppress
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from compiler._tasks import Interruptible, run_io
from compiler.ahead import Ahead, extract_ahead
from compiler.categories import current_categories, ensure_categories
from compiler.claims import ExtractionClaims
from compiler.classify import CatalogRanker
from compiler.documents import convert_process
from compiler.early import Early, read_early
from compiler.identity_index import Arrival
from compiler.intake import intake_paths, intake_sources, still_pending
from compiler.mode import PROMPTS, choose_mode, extraction_version
from compiler.record import INDEX_FINGERPRINT
from compiler.recovery import put_back, reconcile, unfinished_run
from compiler.result import CompileResult, Failure
from compiler.review import hold_for_review, hold_hand_edits
from compiler.review_policy import hold_reason
from compiler.revisions import retire_superseded
from compiler.runs import RunTracker
from compiler.sources import Source
from compiler.stages import (
    ProgressFn,
    RunContext,
    catalog_links,
    commit_stage,
    extract_stage,
    index_stage,
    plan_stage,
    write_stage,
)
from compiler.state import Recorded, RunState
from kb_ai.errors import StorageError
from kb_ai.grounding import forget_remembered
from kb_ai.llm import LLM, calling_as, open_llm
from kb_ai.settings import Settings
from wiki import KnowledgeBase, all_sources, current_catalog, get_meta, open_state, record_run
from wiki.lock import CompileLock, compile_lock
from wiki.remote import publish
from wiki.remote import sync as sync_remote

__all__ = ["PROMPTS", "Compiler", "compile_run", "extraction_version"]


async def compile_run(
    kb: KnowledgeBase,
    settings: Settings,
    inputs: Iterable[str | Path] | Sequence[Source],
    *,
    force: bool = False,
    llm_factory: Callable[..., LLM] = open_llm,
    progress: ProgressFn | None = None,
    started_by: str = "cli",
) -> CompileResult:
    """Compile ``inputs`` into ``kb`` in one run: files, folders and URLs by name, or
    sources already read (compiler/intake.py reads queued tasks into them)."""
    compiler = Compiler(
        kb, settings, llm_factory=llm_factory, progress=progress, started_by=started_by
    )
    items = list(inputs)
    if items and all(isinstance(i, Source) for i in items):
        return await compiler.compile_sources(items, force=force)  # type: ignore[arg-type]
    return await compiler.compile_paths(items, force=force)  # type: ignore[arg-type]


#: How often a run waiting for another writer asks for the compile lock again.
LOCK_POLL_S = 0.05


class Compiler:
    """Compiles sources into one knowledge base. One instance per run."""

    @property
    def interrupted(self) -> bool:
        return self._tasks.interrupted

    def interrupt(self) -> None:
        """Stop: cancel what is in flight; what finished is still indexed and committed."""
        self._tasks.interrupt()

    def __init__(
        self,
        kb: KnowledgeBase,
        settings: Settings,
        *,
        llm_factory: Callable[..., LLM] = open_llm,
        progress: ProgressFn | None = None,
        started_by: str = "cli",
        guard: Callable[[], None] | None = None,
    ) -> None:
        """``guard``: called (blocking) before the run records anything, after it made
        sure it still holds the compile lock; raising StorageError stops the run there,
        its articles put back (a worker checks its tasks are still its own)."""
        self.kb = kb
        self.guard = guard
        self._lock: CompileLock | None = None
        self._claims: ExtractionClaims | None = None  # with a shared database
        self.started_by = started_by  # shown on Status: cli, web, agent session
        self.settings = settings
        self.llm_factory = llm_factory
        self.progress = progress or (lambda *a, **k: None)
        self._tasks = Interruptible()

    # -- entry points ---------------------------------------------------------------

    async def compile_paths(
        self, paths: Iterable[str | Path], *, force: bool = False, revises: str = ""
    ) -> CompileResult:
        """Compile the files, folders, archives and URLs ``paths`` name; ``revises``: the
        id of the source the one document named is a revision of (``--revises``)."""
        started = time.monotonic()
        with convert_process(self.settings) as converter:  # each document: convert_timeout
            state = intake_paths(self.kb, paths, self.settings, force=force,
                                 converter=converter, revises=revises)  # fmt: skip
            return await self._compile(state, started, force)

    async def compile_sources(
        self,
        sources: Sequence[Source],
        *,
        force: bool = False,
        arrivals: Mapping[str, Arrival] | None = None,
    ) -> CompileResult:
        """Compile sources read already (the web queue, agent hooks); ``arrivals``: by
        origin, the file name each came under and what it revises."""
        started = time.monotonic()
        state = intake_sources(self.kb, sources, force=force, arrivals=arrivals)
        return await self._compile(state, started, force)

    # -- the run ---------------------------------------------------------------------

    async def _compile(self, state: RunState, started: float, force: bool) -> CompileResult:
        """Intake's state through the stages, recorded as a run: its sources extracted
        first, then the rest under the compile lock."""
        # state.db held open for the run (and not used): each open and close of it in the
        # run was otherwise the last connection's, and SQLite checkpoints and deletes the
        # WAL on such a close and makes it again on the next open, ~15 ms each time, six
        # times after the last model reply (the run's record, the sources, the tracker).
        forget_remembered()
        with closing(open_state(self.kb)):
            return await self._compile_held(state, started, force)

    async def _compile_held(self, state: RunState, started: float, force: bool) -> CompileResult:
        run_started = datetime.now(UTC)
        busy = bool(state.pending) or unfinished_run(self.kb)
        # A free lock is taken at once, and the run extracts under it, each source
        # classified as soon as it is extracted: the calls in flight stay full (extracting
        # everything first put a stage barrier in every run, 0.84 -> 0.75 of the ideal
        # time at 16 in flight). Held by another writer, the run extracts while it waits
        # (compiler/ahead.py) and takes turns only for the rest: several workers extract
        # at once.
        lock = compile_lock(self.kb)
        held = busy and lock.acquire(blocking=False)
        try:
            # Sources extracted ahead of the lock say so: the stages' own extract
            # (answered by then) is on Status, not said to the caller again.
            ahead_of_lock = bool(state.pending) and not held
            said = _after_extraction(self.progress) if ahead_of_lock else self.progress
            tracker = RunTracker(self.kb, self.started_by, said)
            if busy:
                taken, held = held, False  # from here _run releases it
                state = await self._run(state, tracker, force, lock, taken)
        finally:
            if held:
                lock.release()
        try:
            return await self._after_run(state, tracker, run_started, started)
        finally:
            tracker.stop_beating()  # however it ended: a run not finished shows as died

    async def _run(
        self, state: RunState, tracker: RunTracker, force: bool, lock: CompileLock, held: bool
    ) -> RunState:
        """Extraction (ahead of the lock unless ``held``), then the rest under it; the
        lock is released when this returns."""
        llm = None
        try:  # the lock is released however this ends (a model client that cannot open)
            if state.pending:
                llm = self.llm_factory(self.settings, db_path=self.kb.state_db)
                self._claims = await run_io(ExtractionClaims.of, self.kb)
            self._tasks.install_handler()
            ahead, early = Ahead(), None
            if llm is not None and not held:
                state, ahead = await self._extract_ahead(llm, state)
            elif llm is not None and self._claims is None:
                early = await self._read_early(llm, state)
            try:
                if self.interrupted:  # nothing of it reached the wiki: nothing to write
                    state = _interrupted(state, ahead)
                else:
                    taken, held = held, False  # from here _locked releases it
                    state = await self._locked(
                        llm, state, ahead, tracker, force, lock, taken, early
                    )
            finally:
                if early is not None:
                    early.drop()  # (the extract stage's, unless the run stopped before it)
        finally:
            if held:
                lock.release()
            self._tasks.remove_handler()
            if self._claims is not None:
                await self._claims.close()
                self._claims = None
            if llm is not None:
                await _close(llm)  # closing twice is harmless
        if llm is not None:  # what was extracted ahead of the lock included
            state = replace(state, result=replace(state.result, usage=llm.usage))
        return state

    async def _after_run(
        self, state: RunState, tracker: RunTracker, run_started: datetime, started: float
    ) -> CompileResult:
        """Review holds, retired copies, the run's record, the push."""
        # held for a reviewer (review_policy): main stays as it was until approved
        hold = await run_io(hold_reason, self.kb, self.settings, state.hand_merged)
        commit = await retire_superseded(
            self.kb, self.settings, state.result, self.llm_factory, self.started_by,
            held=bool(hold),
        )  # fmt: skip
        result = replace(
            state.result,
            commit=commit,
            interrupted=self.interrupted,
            duration_s=time.monotonic() - started,
        )
        if tracker.run_id is not None:
            outcome = "interrupted" if result.interrupted else "done"
            if result.failed and not result.compiled:
                outcome = "failed"
            tracker.finish(outcome, result.as_dict(), result.commit)
            run_id = tracker.run_id
        else:
            with closing(open_state(self.kb)) as conn:
                run_id = record_run(
                    conn,
                    run_started.isoformat(),
                    datetime.now(UTC).isoformat(),
                    result.as_dict(),
                    result.commit,
                )
        if hold and result.commit:
            review = await run_io(
                hold_for_review, self.kb, run_id, result.commit, list(result.compiled), hold
            )
            result = replace(result, review=review)
        if state.held:  # the person's version stays on main; kb-ai's waits beside it
            held_review = await run_io(hold_hand_edits, self.kb, run_id, list(state.held))
            result = replace(result, held_review=held_review)
        if result.commit:  # to the wiki remote, if it follows one (wiki/remote.py)
            await run_io(publish, self.kb)
        return result

    async def _extract_ahead(self, llm: LLM, state: RunState) -> tuple[RunState, Ahead]:
        """The sources read and extracted, before the run takes the lock (compiler/ahead.py)."""
        mode = choose_mode(self.settings, current_categories(self.kb, self.settings))
        with calling_as(self._caller):
            return await extract_ahead(
                self.kb, self.settings.model or "", mode, llm, state, self._tasks, self.progress,
                self._claims,
            )  # fmt: skip

    async def _read_early(self, llm: LLM, state: RunState) -> Early:
        """The first sources read and asked for, before the setup (compiler/early.py)."""
        mode = choose_mode(self.settings, current_categories(self.kb, self.settings))
        with calling_as(self._caller):
            return await read_early(llm, mode, self._tasks, state, self.settings.max_concurrency)

    async def _locked(
        self,
        llm: LLM | None,
        state: RunState,
        ahead: Ahead,
        tracker: RunTracker,
        force: bool,
        lock: CompileLock,
        held: bool,
        early: Early | None = None,
    ) -> RunState:
        """The run's writing part, holding the compile lock (taken here unless ``held``;
        released when this returns): the wiki as it is now (the remote's commits, a
        killed run settled), then the stages."""
        if not held and not await self._wait_for(lock):
            lock.release()  # not taken: only what its tries kept open (a connection)
            return _interrupted(state, ahead)  # stopped while it waited: nothing written
        self._lock = lock
        try:
            # Another run may have committed since intake (while this one extracted or
            # waited): its raw slugs are taken now, and what it compiled needs no
            # second pass.
            if state.pending:
                with closing(open_state(self.kb)) as conn:
                    state = still_pending(state, all_sources(conn), force=force)
            tracker.start(len(state.pending))
            try:
                # The wiki remote's commits first (a fast-forward), so the run writes
                # on top of what other servers wrote; what waited here is pushed.
                await run_io(sync_remote, self.kb)
                # A run killed before its commit left articles: settled before anything.
                commit = await run_io(reconcile, self.kb)
                state = replace(state, result=replace(state.result, commit=commit))
                if state.pending and llm is not None:
                    state = await self._run_stages(llm, state, ahead, tracker, early)
            except BaseException as exc:
                tracker.finish("failed", {"error": str(exc) or type(exc).__name__}, None)
                raise
        finally:
            self._lock = None
            lock.release()
        return state

    async def _wait_for(self, lock: CompileLock) -> bool:
        """Take ``lock`` once the writer holding it lets go; False when the run is
        stopped first (Ctrl-C, SIGTERM, a worker stopping). Asked again every
        LOCK_POLL_S rather than waited for in a thread: a thread blocked on the lock
        cannot be stopped, and it took the lock for no one after its run was cancelled."""
        if lock.acquire(blocking=False, retry=True):
            return True
        self.progress("waiting", reason="another compile of this knowledge base is running")
        while not self.interrupted:
            await asyncio.sleep(LOCK_POLL_S)
            if lock.acquire(blocking=False, retry=True):  # at once: nothing to cancel
                return True
        return False

    @property
    def _caller(self) -> str:
        """Whom the model serves (the local model serves each submitter in turn)."""
        actor = self.kb.actor
        return actor.name if actor is not None else ""

    async def _run_stages(
        self, llm: LLM, state: RunState, ahead: Ahead, progress: ProgressFn, early: Early | None
    ) -> RunState:
        """The stages, the model serving the run's submitter (in turn with others)."""
        with calling_as(self._caller):
            return await self._stages(llm, state, ahead, progress, early)

    async def _stages(
        self, llm: LLM, state: RunState, ahead: Ahead, progress: ProgressFn, early: Early | None
    ) -> RunState:
        """extract (and classify) -> plan -> write -> index -> commit."""
        categories = ensure_categories(self.kb, self.settings)
        mode = choose_mode(self.settings, categories)  # once: small models name sources
        # Articles modified after this are read again at the end. A second early: file
        # times come from the kernel's coarse clock, which lags time.time_ns() a little.
        state = replace(state, catalog_ns=time.time_ns() - 1_000_000_000)
        with closing(open_state(self.kb)) as conn:
            fingerprint = get_meta(conn, INDEX_FINGERPRINT)
        # Only classify needs the catalog: it loads while the first sources are extracted
        # (a wiki of 10,000 articles took ~0.5 s to load and rank before the first call).
        ranker = asyncio.ensure_future(run_io(_load_ranker, self.kb, fingerprint))
        links = asyncio.ensure_future(catalog_links(ranker))  # (for the write stage)
        ctx = RunContext(self.kb, self.settings, llm, mode, self._tasks, progress, ranker,
                         self._still_the_writer, ahead, self._claims, links)  # fmt: skip
        try:
            state = await extract_stage(ctx, state, early)
            if not state.work:  # nothing could be read: nothing to write, log or commit
                return state
            state = plan_stage(ctx, state, await asyncio.shield(ranker))
            state = await write_stage(ctx, state)
            # Nothing more to ask the model: its connections and call log close once git
            # commits, when the event loop only waits (beside the index stage, closing
            # took ~9 ms of the loop's time from it).
            try:
                state = await index_stage(ctx, state)
                return await commit_stage(ctx, state, beside=partial(_close, llm))
            finally:
                await _close(llm)  # (closed already, unless the stages failed first)
        finally:
            for loading in (ranker, links):  # a failure to load was reported by classify
                with suppress(Exception):
                    await loading

    def _still_the_writer(self, recorded: Recorded | None = None) -> None:
        """Before the run records anything, and again just before its commit: it still
        holds the compile lock (a database restart frees the shared one with its
        session, and another server may take it) and ``guard`` passes. Else what it
        recorded (``recorded``: the sources' rows, indexes, log.md and lessons as they
        were) and the articles it wrote are put back as they were before the run
        (compiler/recovery.py) and the StorageError stops it: nothing half-written,
        nothing committed, and a worker's tasks go back."""
        try:
            if self._lock is not None:
                self._lock.check()
            if self.guard is not None:
                self.guard()
        except StorageError:  # the database's own errors arrive as one (wiki/database.py)
            if recorded is not None:
                put_back(self.kb, recorded)
            reconcile(self.kb)
            raise


def _after_extraction(progress: ProgressFn) -> ProgressFn:
    """``progress`` without the extract stage's events."""

    def said(event: str, **data: object) -> None:
        if event in ("stage", "advance") and data.get("name") == "extract":
            return
        progress(event, **data)

    return said


def _interrupted(state: RunState, ahead: Ahead) -> RunState:
    """Stopped before the lock: every pending source is reported, and compiles next time."""
    failed = []
    for item in state.pending:
        read = item.origin in ahead.read
        reason = "interrupted before it finished" if read else "interrupted before it was read"
        failed.append(Failure(item.origin, reason))
    result = replace(state.result, failed=[*state.result.failed, *failed])
    return replace(state, result=result, pending=())


def _load_ranker(kb: KnowledgeBase, fingerprint: str | None) -> CatalogRanker:
    return CatalogRanker(current_catalog(kb, fingerprint))


async def _close(llm: LLM) -> None:
    """Close the client (it may be asked to close again: closing twice is harmless)."""
    if hasattr(llm, "aclose"):
        await llm.aclose()
