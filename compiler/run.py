"""One compile run: sources -> extract -> classify -> write -> index -> one git commit.

Work runs concurrently (the LLM client bounds how many calls are in flight), but every
decision that combines results is taken in input order, so the same input gives the
same wiki whichever call finishes first. Ctrl-C cancels what is in flight and commits
what finished.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import closing, suppress
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from compiler._tasks import CANCELLED, Interruptible, Stager, run_io
from compiler.categories import ensure_categories
from compiler.classify import CatalogRanker, Target, classify_source
from compiler.document_article import write_document_articles
from compiler.documents import convert_process
from compiler.extract import Extraction, extract_source
from compiler.hand_edits import Held, look_at, store_merged
from compiler.identity_index import Arrival, SourceIndex
from compiler.intake import Pending, pending_paths, still_pending
from compiler.links import LinkTargets, link_mentions
from compiler.recompose import delete_left, needs_rewrite, plan_rewrite
from compiler.record import (
    INDEX_FINGERPRINT,
    commit_message,
    log_run,
    record_sources,
    update_search,
    write_run_indexes,
)
from compiler.recovery import finish_journal, journaled, reconcile, unfinished_run
from compiler.result import CompileResult, Failure
from compiler.review import hold_for_review, hold_hand_edits
from compiler.revisions import (
    allocate_source,
    keep_articles,
    pending_told,
    retire_superseded,
    said_revises,
)
from compiler.runs import RunTracker
from compiler.source_article import name_source, own_source, source_article, source_targets
from compiler.sources import Source
from compiler.work import Plan, Work, plan_articles, taken_slugs
from compiler.write import Material, compile_article
from kb_ai.errors import KbAiError
from kb_ai.llm import LLM, open_llm
from kb_ai.prompts import PromptLibrary
from kb_ai.settings import Settings
from wiki import (
    Article,
    CatalogEntry,
    ExtractionRecord,
    KnowledgeBase,
    RawSource,
    all_sources,
    commit_all,
    current_catalog,
    get_meta,
    open_state,
    read_extraction,
    record_run,
    write_extraction,
    write_raw,
)
from wiki.git import stage_ahead
from wiki.hand_edits import commit_pending_edits, load_versions, save_versions
from wiki.lock import KbLock

PROMPTS = PromptLibrary(Path(__file__).parent / "prompts")
ProgressFn = Callable[..., None]


def extraction_version(small: bool = False) -> str:
    """The version of the extract prompts (notes and transcripts, or a small model's
    naming prompt): a change to one is lag."""
    if small:
        return "small-" + PROMPTS.version("extract_small")[:12]
    return PROMPTS.version("extract")[:6] + PROMPTS.version("extract_transcript")[:6]


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
    ) -> None:
        self.kb = kb
        self.started_by = started_by  # shown on Status: cli, web, agent session
        self.settings = settings
        self.llm_factory = llm_factory
        self.progress = progress or (lambda *a, **k: None)
        self._tasks = Interruptible()
        self._llm: LLM | None = None
        self._catalog: list[CatalogEntry] = []  # as the run started
        # Articles a revised source no longer feeds: path -> the raw paths that left it.
        self._dropped: dict[str, set[str]] = {}
        self._origins: dict[str, str] = {}  # raw path -> the file it was compiled from
        self._catalog_ns = 0
        self._work: dict[str, Work] = {}  # raw path -> its source's work, once all read
        self._arrivals: dict[str, Arrival] = {}  # origin -> what came with it (identity)
        self._held: list[Held] = []  # articles whose new version meets a person's change
        self._versions: dict[str, str] = {}  # path -> the blob id kb-ai last wrote there

    # -- entry points ---------------------------------------------------------------

    async def compile_paths(
        self, paths: Iterable[str | Path], *, force: bool = False, revises: str = ""
    ) -> CompileResult:
        """Compile files, folders and URLs; ``revises``: the id of the source the one
        document named is a revision of (``kb-ai compile --revises``)."""
        started = time.monotonic()
        paths = list(paths)
        with convert_process(self.settings) as converter:  # each document: convert_timeout
            pending, result, known = pending_paths(
                self.kb, paths, self.settings, force or bool(revises), converter
            )
            if revises:
                self._arrivals = said_revises(paths, pending, revises)
            return await self._compile(pending, result, started, known, force)

    async def compile_sources(
        self,
        sources: Sequence[Source],
        *,
        force: bool = False,
        arrivals: dict[str, Arrival] | None = None,
    ) -> CompileResult:
        """Compile sources handed over directly (the web queue, agent hooks);
        ``arrivals``: by origin, the file name each came under and what it revises."""
        started = time.monotonic()
        result = CompileResult(sources=len(sources))
        self._arrivals = dict(arrivals or {})
        with closing(open_state(self.kb)) as conn:
            known = all_sources(conn)
        pending = pending_told(sources, known, result, self._arrivals, force=force)
        return await self._compile(pending, result, started, known, force)

    # -- the run ---------------------------------------------------------------------

    async def _compile(
        self,
        pending: Sequence[Pending],
        result: CompileResult,
        started: float,
        known: dict,
        force: bool,
    ) -> CompileResult:
        run_started = datetime.now(UTC)
        tracker = RunTracker(self.kb, self.started_by, self.progress)
        if pending or unfinished_run(self.kb):
            lock = KbLock(self.kb.state_dir / "compile.lock")
            if not lock.acquire(blocking=False):
                self.progress("waiting", reason="another compile of this knowledge base is running")
                await asyncio.to_thread(lock.acquire)
                # The run we waited for changed the state: its raw slugs are taken now,
                # and what it compiled needs no second pass.
                with closing(open_state(self.kb)) as conn:
                    known = all_sources(conn)
                pending = still_pending(pending, known, result, force=force)
            self._tasks.install_handler()
            tracker.start(len(pending))
            forward, self.progress = self.progress, tracker
            try:
                # A run killed before its commit left articles: settled before anything.
                result.commit = await run_io(reconcile, self.kb)
                if pending:
                    await self._run_pipeline(pending, result, known)
            except BaseException as exc:
                tracker.finish("failed", {"error": str(exc) or type(exc).__name__}, None)
                raise
            finally:
                self.progress = forward
                self._tasks.remove_handler()
                lock.release()
                await self._close_llm()
            if self._llm is not None:
                result.usage = self._llm.usage
        await retire_superseded(self.kb, self.settings, result, self.llm_factory, self.started_by)
        result.interrupted = self.interrupted
        result.duration_s = time.monotonic() - started
        if tracker.run_id is not None:
            state = "interrupted" if result.interrupted else "done"
            if result.failed and not result.compiled:
                state = "failed"
            tracker.finish(state, result.as_dict(), result.commit)
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
        if self.settings.review and result.commit:  # main stays as it was until approved
            result.review = await run_io(
                hold_for_review, self.kb, run_id, result.commit, list(result.compiled)
            )
        if self._held:  # the person's version stays on main; kb-ai's waits beside it
            result.held_review = await run_io(hold_hand_edits, self.kb, run_id, self._held)
        return result

    async def _run_pipeline(
        self, pending: Sequence[Pending], result: CompileResult, known: dict
    ) -> None:
        llm = self._llm = self.llm_factory(self.settings, db_path=self.kb.state_db)
        categories = ensure_categories(self.kb, self.settings)
        # Articles modified after this are read again at the end. A second early: file
        # times come from the kernel's coarse clock, which lags time.time_ns() a little.
        self._catalog_ns = time.time_ns() - 1_000_000_000
        with closing(open_state(self.kb)) as conn:
            fingerprint = get_meta(conn, INDEX_FINGERPRINT)
        # Only classify needs the catalog: it loads while the first sources are extracted
        # (a wiki of 10,000 articles took ~0.5 s to load and rank before the first call).
        ranker_ready = asyncio.ensure_future(run_io(self._load_catalog, fingerprint))
        try:
            await self._run_stages(pending, result, known, llm, categories, ranker_ready)
        finally:
            with suppress(Exception):  # a failure to load it was reported by classify
                await ranker_ready

    def _load_catalog(self, fingerprint: str | None) -> CatalogRanker:
        self._catalog = current_catalog(self.kb, fingerprint)
        return CatalogRanker(self._catalog)

    async def _run_stages(
        self,
        pending: Sequence[Pending],
        result: CompileResult,
        known: dict,
        llm: LLM,
        categories: Sequence[str],
        ranker_ready: asyncio.Future,
    ) -> None:
        self.progress("stage", name="extract", total=len(pending))

        async def prepare(w: Work) -> None:
            await self._prepare(llm, w, ranker_ready, categories)
            self.progress("advance", name="extract", item=w.source.origin)

        # Sources are read one after another, in input order (which hands out raw slugs
        # deterministically), each starting on its way to the model once read.
        work: list[Work] = []
        tasks = []
        taken = taken_slugs(known)
        in_run: set[str] = set()  # the raw paths of this run's sources
        with closing(open_state(self.kb, any_thread=True)) as conn:
            index = await run_io(SourceIndex, self.kb, conn, known)
            for item in pending:
                if self.interrupted:
                    result.failed.append(Failure(item.origin, "interrupted before it was read"))
                    continue
                try:
                    src = item if isinstance(item, Source) else await run_io(item.read)
                    # where a document gets its raw slug: the one of the source it revises
                    w = await run_io(partial(allocate_source, src, known, taken, index, result,
                                     arrival=self._arrivals.get(src.origin), in_run=in_run))  # fmt: skip
                except KbAiError as exc:
                    result.failed.append(Failure(item.origin, str(exc)))
                    self.progress("advance", name="extract", item=item.origin)
                    continue
                result.redactions += src.redactions
                work.append(w)
                tasks.append(self._tasks.spawn(prepare(w)))
        if not work:  # nothing could be read: nothing to write, log or commit
            return
        outcomes = await self._tasks.collect(tasks)
        for w, outcome in zip(work, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                w.error = str(outcome)
            elif outcome is CANCELLED:
                w.error = "interrupted before it finished"
        existing = (await asyncio.shield(ranker_ready)).by_path
        existing_paths = set(existing)
        if self.settings.writes_from_sources:  # one article per source, in input order
            source_targets(work, existing, categories)
        self._work = {w.raw_path: w for w in work}
        plan = plan_articles(work, existing_paths, self._dropped)
        self._origins = {w.raw_path: w.source.origin for w in work}
        if self.interrupted:
            plan = {}
        # An article changed by hand and not committed becomes the person's own commit,
        # never part of kb-ai's (whose trailer would claim the person's words).
        if plan:
            await run_io(commit_pending_edits, self.kb)
        # Every raw copy and extraction of the run is on disk, and each article is once
        # written: git hashes them while the model writes the rest, not after the last.
        stager = Stager(partial(stage_ahead, self.kb))
        stager.add("raw", "extraction")
        try:
            written, article_errors = await self._write_articles(llm, plan, result, stager)
        finally:
            await stager.close()  # before the commit, which stages too
        # Nothing more to ask the model: its connections and call log close meanwhile.
        closed = asyncio.ensure_future(self._close_llm())
        try:
            await self._finish(work, plan, written, article_errors, result)
        finally:
            await closed

    async def _close_llm(self) -> None:
        """Close the client (it may be asked to close again: closing twice is harmless)."""
        if self._llm is not None and hasattr(self._llm, "aclose"):
            await self._llm.aclose()

    async def _write_articles(
        self, llm: LLM, plan: dict, result: CompileResult, stager: Stager
    ) -> tuple[dict[str, Article], dict[str, str]]:
        """Write every planned article; returns the paths stored and the errors by path."""
        self.progress("stage", name="write", total=len(plan))
        # Stored on disk, by path: what the run commits, whatever else happens.
        written: dict[str, Article] = {}
        # Every article of the wiki as it will be after the run: mentions become links.
        targets = LinkTargets.of(
            [(e.path, e.title) for e in self._catalog]
            + [(path, target.title) for path, (target, _, _) in plan.items()]
        )

        notes: dict[str, list[str]] = {}  # what the checks changed, by path (for log.md)
        wrote: dict[str, str | None] = {}  # path -> blob id of kb-ai's own text stored

        async def write(path: str, target: Target, material: list[Material]) -> None:
            # File work runs in threads: an fsync per file on the event loop held back
            # every other call in flight.
            # a person's change to the article: the writer works from kb-ai's own last
            # version, and the change is merged in when the new one is stored
            known = self._versions.get(path)
            look = await asyncio.to_thread(look_at, self.kb, path, known) if target.exists else None
            existing = look.existing if look is not None else None
            rewrite = None
            dropped = self._dropped.get(path, set())
            if existing is not None and needs_rewrite(
                existing, material, dropped, self.settings.patch_threshold_chars
            ):
                rewrite = await run_io(
                    plan_rewrite,
                    self.kb,
                    existing,
                    material,
                    dropped,
                    self.settings.patch_threshold_chars,
                )
            if rewrite is not None:
                if not rewrite.material:
                    gone = await run_io(delete_left, self.kb, existing, dropped, self._origins)
                    result.deleted.append(gone)
                    stager.add(path)
                    return
                target, material, existing = rewrite.target, rewrite.material, rewrite.existing
            own = self.settings.writes_from_sources and own_source(self._work, material, existing)
            article = (
                source_article(own, target, existing, notes.setdefault(path, []))
                if own
                else await compile_article(
                    llm,
                    PROMPTS,
                    target,
                    material,
                    existing,
                    patch_threshold=self.settings.patch_threshold_chars,
                    notes=notes.setdefault(path, []),
                    material_chars=self.settings.write_material_chars,
                    prompt_chars=self.settings.max_prompt_chars,
                )
            )
            if rewrite is not None:
                article = rewrite.finish(article)
            article = replace(article, body=link_mentions(article.body, targets, article.path))

            def store() -> None:
                with journaled(self.kb, path):
                    stored = store_merged(self.kb, article, look, notes.setdefault(path, []))
                if isinstance(stored, Held):
                    self._held.append(stored)
                else:
                    written[path] = stored.article
                    wrote[path] = stored.blob

            await run_io(store)
            stager.add(path)
            self.progress("advance", name="write", item=path)

        items = list(plan.items())
        self._versions = await run_io(self._load_versions)
        outcomes = await self._tasks.run_all(write(p, t, m) for p, (t, m, _) in items)
        if wrote:
            await run_io(self._save_versions, wrote)
        self._held.sort(key=lambda h: h.path)
        held = {h.path for h in self._held}
        article_errors: dict[str, str] = {}
        result.deleted.sort(key=lambda d: d.path)  # in path order, whichever went first
        deleted = {d.path for d in result.deleted}
        for (path, (target, _, _)), outcome in zip(items, outcomes, strict=True):
            result.checks += [f"{path}: {note}" for note in notes.get(path, [])]
            if path in deleted:
                continue
            if path in written:
                (result.updated if target.exists else result.created).append(path)
            elif path in held:  # its source is compiled: the update waits for a person
                result.held.append(path)
            else:
                reason = "interrupted" if outcome is CANCELLED else str(outcome)
                article_errors[path] = f"writing {path} failed: {reason}"
        return written, article_errors

    def _load_versions(self) -> dict[str, str]:
        with closing(open_state(self.kb)) as conn:
            return load_versions(conn)

    def _save_versions(self, wrote: dict[str, str | None]) -> None:
        with closing(open_state(self.kb)) as conn:
            save_versions(conn, wrote)

    async def _prepare(
        self, llm: LLM, w: Work, ranker_ready: asyncio.Future, categories: Sequence[str]
    ) -> None:
        src = w.source
        model = self.settings.model or ""
        small = self.settings.writes_from_sources
        version = extraction_version(small)
        # A source seen for the first time has no earlier extraction: no thread to look.
        has_old = (self.kb.extraction_dir / f"{w.slug}.md").is_file()
        old = await run_io(self._read_previous_extraction, w.slug) if has_old else None
        # The raw copy is written while the model reads the source, not before.
        raw = asyncio.ensure_future(
            run_io(
                write_raw,
                self.kb,
                RawSource(
                    slug=w.slug,
                    title=src.title,
                    origin=src.origin,
                    kind=src.kind,
                    checksum=src.checksum,
                    ingested_at=datetime.now(UTC).isoformat(timespec="seconds"),
                    text=src.text,
                    original=src.original,
                    original_suffix=src.original_suffix,
                ),
            )
        )
        try:
            reusable = (
                old is not None
                and old.source_checksum == src.checksum
                and old.model == model
                and old.prompt_version == version
            )
            if reusable:  # an interrupted or failed run already paid for this extraction
                w.extraction = Extraction.from_data(old.data)
            else:  # a small model only names the source: its text is the article
                w.extraction = await (
                    name_source(llm, PROMPTS, src, categories)
                    if small
                    else extract_source(llm, PROMPTS, src)
                )
                await run_io(
                    write_extraction,
                    self.kb,
                    w.slug,
                    ExtractionRecord(
                        source=w.raw_path,
                        source_checksum=src.checksum,
                        model=model,
                        prompt_version=version,
                        extracted_at=datetime.now(UTC).isoformat(timespec="seconds"),
                        data=w.extraction.as_data(),
                    ),
                )
                if old is not None and old.source_checksum != src.checksum and w.previous_articles:
                    w.previous_text = Extraction.from_data(old.data).to_markdown()
        finally:
            await raw  # written even when the model failed: the next run reuses it
        if small:  # no classify: targets are set in input order once all are named
            return
        # Shared by every source: shielded, so one cancelled source does not cancel it.
        ranker = await asyncio.shield(ranker_ready)
        self.progress("classify", item=src.origin)
        targets = await classify_source(
            llm,
            PROMPTS,
            source_title=src.title,
            extraction=w.extraction,
            ranker=ranker,
            categories=categories,
            budget_chars=self.settings.catalog_budget_chars,
            max_new=self.settings.max_new_articles_per_source,
        )
        w.targets = keep_articles(w, targets, ranker.by_path)

    def _read_previous_extraction(self, slug: str) -> ExtractionRecord | None:
        """The stored extraction of a source, or None when it is unreadable."""
        try:
            return read_extraction(self.kb, f"extraction/{slug}.md")
        except (KbAiError, OSError, UnicodeDecodeError):  # gone or damaged: extract again
            return None

    async def _finish(
        self,
        work: list[Work],
        plan: Plan,
        written: dict[str, Article],
        article_errors: dict[str, str],
        result: CompileResult,
    ) -> None:
        if not self.interrupted:  # a long document's outline, linking what it fed
            self._held += await run_io(
                write_document_articles, self.kb, work, plan, written, result
            )
        record_sources(self.kb, work, plan, article_errors, result, model=self.settings.model or "",
                       prompt_version=extraction_version(self.settings.writes_from_sources),
                       interrupted=self.interrupted)  # fmt: skip
        self.progress("stage", name="index", total=len(written))
        deleted = [d.path for d in result.deleted]
        if written or deleted:
            await run_io(write_run_indexes, self.kb, self._catalog, self._catalog_ns, written)
        log_run(self.kb, result, interrupted=self.interrupted)
        # The search index is not versioned: it is brought up to date while git commits
        # (git is a process of its own; two Python threads would only take turns).
        search = (
            asyncio.ensure_future(run_io(update_search, self.kb, written, deleted))
            if written or deleted
            else None
        )
        self.progress("stage", name="commit", total=0)
        try:
            result.commit = await run_io(commit_all, self.kb, commit_message(result))
            await run_io(finish_journal, self.kb)
        finally:
            if search is not None:
                await search
