"""The stages of a compile run after intake, in the order they run:

    extract (and classify, per source, as each is extracted) -> plan -> write -> index
    -> commit

Each stage takes the run's context (what does not change during the run: the knowledge
base, the settings, the model client, the mode) and a RunState, and returns a new
RunState. Work runs concurrently (the LLM client bounds how many calls are in flight),
but every decision that combines results is taken in input order, so the same input
gives the same wiki whichever call finishes first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Future as ThreadFuture
from contextlib import closing
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial

from compiler._tasks import CANCELLED, Interruptible, Stager, run_io
from compiler.ahead import Ahead, is_current, previous_extraction
from compiler.allocate import Identities, allocate_source, copy_in_run, taken_slugs
from compiler.claims import ExtractionClaims, claim_key
from compiler.classify import CatalogRanker
from compiler.document_article import write_document_articles
from compiler.early import Early, drop_call, read_item, worth_asking
from compiler.extract import Extraction
from compiler.hand_edits import Held, Look, hold_deletion, look_at, person_material, store_merged
from compiler.identity_index import SourceIndex
from compiler.intake import Skipped
from compiler.lessons import learn_from_run
from compiler.links import LinkTargets, link_mentions
from compiler.mode import ComposedArticles
from compiler.plan import plan_articles
from compiler.recompose import delete_left, needs_rewrite, plan_rewrite
from compiler.record import (
    commit_message,
    log_run,
    record_sources,
    update_search,
    write_run_indexes,
)
from compiler.recovery import Journal, after_learning, before_recording, finish_journal
from compiler.result import COPY, Deletion, Failure, Revision
from compiler.sources import Source
from compiler.state import Pending, Plan, PlannedArticle, RunState, Work
from kb_ai.errors import KbAiError
from kb_ai.llm import LLM
from kb_ai.settings import Settings
from wiki import (
    Article,
    CatalogEntry,
    ExtractionRecord,
    KnowledgeBase,
    RawSource,
    commit_all,
    open_state,
    write_extraction,
    write_raw,
)
from wiki.git import stage_ahead
from wiki.hand_edits import commit_pending_edits, load_versions, save_versions

ProgressFn = Callable[..., None]


@dataclass(frozen=True)
class RunContext:
    """What every stage of one run shares, unchanged while it runs."""

    kb: KnowledgeBase
    settings: Settings
    llm: LLM
    mode: ComposedArticles  # chosen once per run (compiler/mode.py)
    tasks: Interruptible
    progress: ProgressFn
    ranker: asyncio.Future  # the CatalogRanker of the wiki as the run started, loading
    # Called before the run records anything, and again just before its commit with what
    # the recording changed (blocking: off the loop); it raises to stop the run there (the
    # compile lock was lost: compiler/run.py puts the recording and the articles back).
    guard: Callable[..., None] = lambda recorded=None: None
    ahead: Ahead = field(default_factory=Ahead)  # extracted before the lock (compiler/ahead.py)
    claims: ExtractionClaims | None = None  # one extraction of a text at a time (shared db)
    # the LinkTargets of the catalog the ranker holds, made in a thread once it is loaded
    # (None: made from the catalog at the write stage)
    links: asyncio.Future | None = None

    @property
    def interrupted(self) -> bool:
        return self.tasks.interrupted


# -- extract and classify ---------------------------------------------------------------


async def extract_stage(ctx: RunContext, state: RunState, early: Early | None = None) -> RunState:
    """Every pending source read, its extraction asked for as soon as it is read (or
    before the run's setup: ``early``, compiler/early.py); then each given its raw slug
    (one after another, in input order, which hands out slugs deterministically),
    stored in raw/ and classified once extracted."""
    try:
        return await _extract_stage(ctx, state, early)
    finally:
        if early is not None:
            early.drop()  # what the stage did not take (interrupted, no longer pending)


async def _extract_stage(ctx: RunContext, state: RunState, early: Early | None) -> RunState:
    if early is not None and not early.usable(state.known, ctx.mode):
        early.drop()  # read against other sources, or for another mode: read again
    ctx.progress("stage", name="extract", total=len(state.pending))
    failed: list[Failure] = []
    skipped: list[str] = []
    redactions = 0
    work: list[Work] = []
    tasks: list[asyncio.Future] = []
    taken = taken_slugs(state.known)
    found = Identities()  # revisions recognised, perhaps-revisions, copies superseded

    async def prepare(w: Work, asked: asyncio.Future | None) -> Work:
        w = await classify(ctx, await extract(ctx, w, asked))
        ctx.progress("advance", name="extract", item=w.source.origin)
        return w

    def gone(item: Pending, reason: str) -> None:
        failed.append(Failure(item.origin, reason))
        ctx.progress("advance", name="extract", item=item.origin)

    # Read first, every source, a new one's extraction asked for as soon as it is read:
    # the model's slots fill at the pace of reading alone. Slugs (state.db's identity
    # index, 1-2 ms a source) and raw copies come after, while the model works: given
    # between the reads, they spaced the first calls 4-5 ms apart, a spread every later
    # round kept (issue 23: 34-41 ms a compile at 16 in flight, bench.compile.paired).
    read: list[tuple[Pending, Source, asyncio.Future | None]] = []
    checksums: set[str] = set()
    for item in state.pending:
        if ctx.interrupted:
            gone(item, "interrupted before it was read")
            continue
        got = early.take(item.origin) if early is not None else None
        src, asked = got if got is not None else (await read_item(item, state.known), None)
        if isinstance(src, KbAiError):
            gone(item, str(src))
            continue
        if isinstance(src, Skipped):  # an agent session with nothing new
            skipped.append(src.key)
            ctx.progress("advance", name="extract", item=item.origin)
            continue
        if got is None:
            asked = _ask_early(ctx, src, state, checksums)
        read.append((item, src, asked))
        checksums.add(src.checksum)
    with closing(open_state(ctx.kb, any_thread=True)) as conn:
        index = await run_io(SourceIndex, ctx.kb, conn, state.known)
        for item, src, asked in read:  # (interrupted: each read one is reported as such)
            try:
                copy = copy_in_run(src, state.known, found)
                if copy is not None:  # one document twice in this run: one source (not asked)
                    found.revisions.append(Revision(src.origin, copy, COPY, 1.0))
                    ctx.progress("advance", name="extract", item=item.origin)
                    continue
                # where a document gets its raw slug: the one of the source it revises
                w = await run_io(partial(allocate_source, src, state.known, taken, index, found,
                                         arrival=state.arrivals.get(src.origin)))  # fmt: skip
            except KbAiError as exc:
                drop_call(asked)
                gone(item, str(exc))
                continue
            redactions += src.redactions
            taken.add(w.slug)
            work.append(w)
            tasks.append(ctx.tasks.spawn(prepare(w, asked)))
    outcomes = await ctx.tasks.collect(tasks)
    for _, _, asked in read:  # an interrupted run's, never awaited
        drop_call(asked)
    done: list[Work] = []
    for w, task, outcome in zip(work, tasks, outcomes, strict=True):
        if outcome is None:
            done.append(task.result())
        elif outcome is CANCELLED:
            done.append(replace(w, error="interrupted before it finished"))
        else:
            done.append(replace(w, error=str(outcome)))
    result = replace(
        state.result,
        failed=[*state.result.failed, *failed],
        skipped=[*state.result.skipped, *skipped],
        redactions=state.result.redactions + redactions,
        revisions=[*state.result.revisions, *found.revisions],
        maybe_revisions=[*state.result.maybe_revisions, *found.maybe_revisions],
        superseded=[*state.result.superseded, *found.superseded],
    )
    return replace(state, result=result, work=tuple(done))


async def extract(ctx: RunContext, w: Work, asked: asyncio.Future | None = None) -> Work:
    """``w`` with its extraction: the stored one when it is of this source, model and
    prompt version (an interrupted or failed run already paid for it), else the model's
    (asked before the run took the lock, compiler/ahead.py; by ``asked``, the call made
    as the source was read; or now). Its raw copy is written meanwhile, and kept even
    when the model fails."""
    src = w.source
    model = ctx.settings.model or ""
    # A source seen for the first time has no earlier extraction: no thread to look.
    has_old = (ctx.kb.extraction_dir / f"{w.slug}.md").is_file()
    old = await run_io(previous_extraction, ctx.kb, w.slug) if has_old else None
    raw = asyncio.ensure_future(run_io(write_raw, ctx.kb, _raw_source(w)))
    try:
        if is_current(old, src, model, ctx.mode.version):
            return replace(w, extraction=Extraction.from_data(old.data))
        ahead = ctx.ahead.of(src, model, ctx.mode)
        if isinstance(ahead, KbAiError):  # the model failed it then: one try, as ever
            raise ahead
        if ahead is not None:
            extraction = ahead
        elif asked is not None:
            extraction = await asked
        else:
            extraction = await _extract_claimed(ctx, src)
        await run_io(
            write_extraction,
            ctx.kb,
            w.slug,
            ExtractionRecord(
                source=w.raw_path,
                source_checksum=src.checksum,
                model=model,
                prompt_version=ctx.mode.version,
                extracted_at=datetime.now(UTC).isoformat(timespec="seconds"),
                data=extraction.as_data(),
            ),
        )
        previous = None
        if old is not None and old.source_checksum != src.checksum and w.previous_articles:
            previous = Extraction.from_data(old.data).to_markdown()
        return replace(w, extraction=extraction, previous_text=previous)
    finally:
        drop_call(asked)  # not needed after all (an earlier extraction reused), or failed here
        await raw  # written even when the model failed: the next run reuses it


def _ask_early(
    ctx: RunContext, src: Source, state: RunState, checksums: set[str]
) -> asyncio.Future | None:
    """The model's extraction of a source seen for the first time (read, not yet given
    a slug), asked for now. None for the others, which are asked (or not) once they
    have their slug: a source compiled or tried before (a failed or interrupted run may
    have left its extraction, which is reused, not paid for again), a second copy of a
    text this run read already (it is recorded as the first), a source extracted before
    the lock (compiler/ahead.py)."""
    if not worth_asking(src, state.known, checksums):
        return None
    if ctx.ahead.of(src, ctx.settings.model or "", ctx.mode) is not None:
        return None
    return ctx.tasks.spawn(_extract_claimed(ctx, src))


async def _extract_claimed(ctx: RunContext, src: Source) -> Extraction:
    """The model's extraction of ``src``; with a shared database, once another run that
    is extracting the same text has done so (its replies then come from the shared
    response cache: compiler/claims.py). Interrupted while it waits: cancelled, the
    model not asked (the source is reported as interrupted before it finished)."""
    if ctx.claims is None:
        return await ctx.mode.extract(ctx.llm, src)
    key = claim_key(src, ctx.settings.model or "", ctx.mode)
    if not await ctx.claims.take(key, wait=True, stopped=lambda: ctx.interrupted):
        raise asyncio.CancelledError  # the wait was stopped: no claim held, none dropped
    try:
        return await ctx.mode.extract(ctx.llm, src)
    finally:
        await ctx.claims.drop(key)


async def classify(ctx: RunContext, w: Work) -> Work:
    """``w`` with the articles its material goes into (in a mode that places sources
    only once all are extracted, as it was)."""
    if not ctx.mode.classifies:
        return w
    # Shared by every source: shielded, so one cancelled source does not cancel it.
    ranker = await asyncio.shield(ctx.ranker)
    ctx.progress("classify", item=w.source.origin)
    return replace(w, targets=await ctx.mode.classify(ctx.llm, w, ranker))


def _raw_source(w: Work) -> RawSource:
    src = w.source
    return RawSource(
        slug=w.slug,
        title=src.title,
        origin=src.origin,
        kind=src.kind,
        checksum=src.checksum,
        ingested_at=datetime.now(UTC).isoformat(timespec="seconds"),
        text=src.text,
        original=src.original,
        original_suffix=src.original_suffix,
    )


# -- plan ---------------------------------------------------------------------------------


def plan_stage(ctx: RunContext, state: RunState, ranker: CatalogRanker) -> RunState:
    """The articles to write, from the work in input order (none once interrupted)."""
    work = ctx.mode.place(state.work, ranker.by_path)
    plan = Plan() if ctx.interrupted else plan_articles(work, ranker.by_path)
    return replace(state, work=work, plan=plan, catalog=tuple(ranker.entries))


# -- write --------------------------------------------------------------------------------


def _hand_on(to: ThreadFuture, done: asyncio.Future) -> None:
    """``done``'s outcome given to ``to``, which a thread can wait for."""
    if done.cancelled():
        to.cancel()
    elif done.exception() is not None:
        to.set_exception(done.exception())
    else:
        to.set_result(done.result())


async def write_stage(ctx: RunContext, state: RunState) -> RunState:
    """Every planned article written and stored (or deleted, when no source is left to
    it); what the checks changed goes to the result's checks."""
    plan = state.plan
    ctx.progress("stage", name="write", total=len(plan.articles))
    # An article changed by hand and not committed becomes the person's own commit,
    # never part of kb-ai's (whose trailer would claim the person's words). git does it
    # while the first write calls go out (it took 4-10 ms at the stage barrier), done
    # before any article is looked at or stored and before the stager touches git.
    edits = asyncio.ensure_future(run_io(commit_pending_edits, ctx.kb)) if plan.articles else None
    committing: ThreadFuture = ThreadFuture()  # the same outcome, for the stores' threads
    if edits is None:
        committing.set_result(None)
    else:
        edits.add_done_callback(partial(_hand_on, committing))

    async def edits_committed() -> None:
        if edits is not None:  # (a write cancelled while it waits must not cancel it)
            await asyncio.shield(edits)

    # Writes whose model call has not come back. Staging ahead hides git's hashing in the
    # model's time; once the last reply is in there is none left to hide it in, and the
    # articles stored after it are left to the commit, which stages everything (waiting
    # for a last `git add` of theirs took 8-15 ms after the last reply).
    unanswered = len(plan.articles)
    # Every raw copy and extraction of the run is on disk, and each article is once
    # written: git hashes them while the model writes the rest, not after the last.
    stager = Stager(partial(stage_ahead, ctx.kb), after=edits, worth=lambda: unanswered > 0)
    stager.add("raw", "extraction")
    journal = Journal(ctx.kb)  # (one connection for the stage's stores)
    written: dict[str, Article] = {}  # stored on disk: what the run commits, whatever else
    deleted: dict[str, Deletion] = {}
    notes: dict[str, list[str]] = {}  # what the checks changed, by path (for log.md)
    held: list[Held] = []  # not written: the new version meets a person's change
    wrote: dict[str, str | None] = {}  # path -> blob id of kb-ai's own text stored
    versions = await run_io(_load_versions, ctx.kb)  # path -> kb-ai's last blob there
    # Every article of the wiki as it will be after the run: mentions become links.
    if ctx.links is not None:  # (made from state.catalog while the model worked)
        catalog = await asyncio.shield(ctx.links)
    else:
        catalog = _catalog_targets(state.catalog)
    links = catalog.extended((path, a.target.title) for path, a in plan.articles.items())
    by_raw = {w.raw_path: w for w in state.work}
    origins = state.origins

    async def write(path: str, planned: PlannedArticle) -> None:
        nonlocal unanswered
        try:
            composed = await compose(path, planned)
        finally:
            unanswered -= 1
        if composed is None:
            return
        article, look, mine = composed

        # File work runs in threads: an fsync per file on the event loop held back
        # every other call in flight.
        def store() -> None:
            # (waited for here, in the store's thread: a reply paid for is stored even
            # when the run is interrupted while the edits are still being committed)
            committing.result()
            with journal.writing(path):
                stored = store_merged(ctx.kb, article, look, mine)
            if isinstance(stored, Held):
                held.append(stored)
            else:
                written[path] = stored.article
                wrote[path] = stored.blob

        await run_io(store)
        if unanswered:
            stager.add(path)
        ctx.progress("advance", name="write", item=path)

    async def compose(
        path: str, planned: PlannedArticle
    ) -> tuple[Article, Look | None, list[str]] | None:
        """The article the model writes for ``path``, checked and linked; None when there
        is nothing to store (its deletion, or a hold)."""
        target, material = planned.target, list(planned.material)
        # a person's change to the article: the writer works from kb-ai's own last
        # version, and the change is merged in when the new one is stored
        known = versions.get(path)
        if target.exists:
            await edits_committed()
        look = await asyncio.to_thread(look_at, ctx.kb, path, known) if target.exists else None
        existing = look.existing if look is not None else None
        dropped = set(plan.dropped.get(path, ()))
        threshold = ctx.settings.patch_threshold_chars
        rewrite = None
        if existing is not None and needs_rewrite(existing, material, dropped, threshold):
            rewrite = await run_io(plan_rewrite, ctx.kb, existing, material, dropped, threshold)
        if rewrite is not None:
            if not rewrite.material:
                # a person's lines in it: held for review, not deleted with them
                hold = hold_deletion(look, path, ", ".join(sorted(dropped))) if look else None
                if hold is not None:
                    held.append(hold)
                    return None
                deleted[path] = await run_io(delete_left, ctx.kb, existing, dropped, origins)
                stager.add(path)
                return None
            target, material, existing = rewrite.target, rewrite.material, rewrite.existing
        mine = notes.setdefault(path, [])
        # a person's lines are material of a composed article (grounded, cited); a small
        # model's article is its source's own text, which the merge keeps them beside
        person = person_material(look) if ctx.mode.composes else None
        if person is not None:
            material = [*material, person]
        article = await ctx.mode.write(ctx.llm, target, material, existing, mine, by_raw)
        if rewrite is not None:
            article = rewrite.finish(article)
        return replace(article, body=link_mentions(article.body, links, article.path)), look, mine

    items = list(plan.articles.items())
    try:
        calls = ctx.settings.max_concurrency  # each request out before the next is built
        order = longest_first(items)
        started = await ctx.tasks.run_paced((write(*items[i]) for i in order), calls)
        by_index = dict(zip(order, started, strict=True))
        outcomes = [by_index[i] for i in range(len(items))]  # (in plan order again)
        await edits_committed()  # (its failure is the stage's, not each article's)
    finally:
        try:
            await stager.close()  # before the commit, which stages too
        finally:
            journal.close()  # (not the last connection to state.db: no checkpoint here)
    if wrote:
        await run_io(_save_versions, ctx.kb, wrote)
    held.sort(key=lambda h: h.path)
    held_paths = {h.path for h in held}
    created, updated, checks, kept = [], [], [], []
    errors: dict[str, str] = {}
    for (path, planned), outcome in zip(items, outcomes, strict=True):
        checks += [f"{path}: {note}" for note in notes.get(path, [])]
        if path in deleted:
            continue
        if path in written:
            (updated if planned.target.exists else created).append(path)
        elif path in held_paths:  # its source is compiled: the update waits for a person
            kept.append(path)
        else:
            reason = "interrupted" if outcome is CANCELLED else str(outcome)
            errors[path] = f"writing {path} failed: {reason}"
    r = state.result
    result = replace(
        r,
        created=[*r.created, *created],
        updated=[*r.updated, *updated],
        # in path order, whichever went first
        deleted=[*r.deleted, *sorted(deleted.values(), key=lambda d: d.path)],
        checks=[*r.checks, *checks],
        held=[*r.held, *kept],
    )
    merged = sorted(p for p, blob in wrote.items() if blob is None)  # (see Stored)
    return replace(state, result=result, written=written, article_errors=errors,
                   held=(*state.held, *held),
                   hand_merged=(*state.hand_merged, *merged))  # fmt: skip


def longest_first(items: Sequence[tuple[str, PlannedArticle]]) -> list[int]:
    """The order to write ``items`` in (indexes): the most material first. A model
    writes a long article for long material, and the calls still out when the rest are
    done are then short ones; the replies of the last calls, checked and stored one
    after another once they are in, are then the lightest to check (the classic
    longest-processing-time rule). Equal ones keep their plan order."""
    size = [sum(len(m.text) for m in a.material) for _, a in items]
    return sorted(range(len(items)), key=lambda i: -size[i])


async def catalog_links(ranker: asyncio.Future) -> LinkTargets:
    """The link targets of the catalog ``ranker`` loads, made while the model works: in
    a thread for a large wiki (10,000 titles: ~45 ms that held the event loop at the
    stage barrier), at once for a small one (less than a thread hop)."""
    entries = (await asyncio.shield(ranker)).entries
    if len(entries) < 1_000:
        return _catalog_targets(entries)
    return await run_io(_catalog_targets, entries)


def _catalog_targets(entries: Sequence[CatalogEntry]) -> LinkTargets:
    return LinkTargets.of((e.path, e.title) for e in entries)


def _load_versions(kb: KnowledgeBase) -> dict[str, str]:
    with closing(open_state(kb)) as conn:
        return load_versions(conn)


def _save_versions(kb: KnowledgeBase, wrote: dict[str, str | None]) -> None:
    with closing(open_state(kb)) as conn:
        save_versions(conn, wrote)


# -- index and commit ---------------------------------------------------------------------


async def index_stage(ctx: RunContext, state: RunState) -> RunState:
    """Long documents' outlines, each source's outcome in state.db, the master index,
    the topics and log.md. File work in two threads (each step in a thread of its own,
    the hops cost 1-5 ms each beside two busy processes, after the last model reply)."""
    state = await run_io(_record, ctx, state)
    ctx.progress("stage", name="index", total=len(state.written))
    await run_io(_write_indexes, ctx, state)
    return state


def _record(ctx: RunContext, state: RunState) -> RunState:
    """The outlines, the sources' outcomes and the lessons (a thread's)."""
    ctx.guard()  # still the one writer? (nothing recorded so far)
    written, result, held = dict(state.written), state.result, state.held
    if not ctx.interrupted:  # a long document's outline, linking what it fed
        outlines, kept = write_document_articles(ctx.kb, state.work, state.plan, written)
        written.update({path: article for path, (article, _) in outlines.items()})
        result = replace(
            result,
            created=[*result.created, *(p for p, (_, old) in outlines.items() if not old)],
            updated=[*result.updated, *(p for p, (_, old) in outlines.items() if old)],
            held=[*result.held, *(h.path for h in kept)],
        )
        held = (*held, *kept)
    copies = [r for r in result.revisions if r.way == COPY]
    sessions = any(w.source.kind == "transcript" for w in state.work)
    recorded = before_recording(
        ctx.kb,
        [*(w.source.origin for w in state.work), *(c.origin for c in copies)],
        lessons=sessions and not ctx.interrupted,
    )
    compiled, failed = record_sources(
        ctx.kb,
        state.work,
        state.plan,
        state.article_errors,
        model=ctx.settings.model or "",
        prompt_version=ctx.mode.version,
        interrupted=ctx.interrupted,
        copies=copies,
    )
    result = replace(
        result, compiled=[*result.compiled, *compiled], failed=[*result.failed, *failed]
    )
    if not ctx.interrupted:  # what the run's sessions taught, in lessons/ (compiler/lessons.py)
        learned = learn_from_run(ctx.kb, ctx.settings, state.work, state.plan)
        recorded = after_learning(ctx.kb, recorded, learned.written)
        result = replace(
            result,
            lessons_found=result.lessons_found + learned.sightings,
            lessons_new=[*result.lessons_new, *learned.new],
            lessons_seen=[*result.lessons_seen, *learned.seen_again],
        )
    return replace(state, result=result, written=written, held=held, recorded=recorded)


def _write_indexes(ctx: RunContext, state: RunState) -> None:
    """The master index and the topics (when an article changed), and log.md."""
    if state.written or state.result.deleted:
        write_run_indexes(ctx.kb, state.catalog, state.catalog_ns, state.written)
    log_run(ctx.kb, state.result, interrupted=ctx.interrupted)


async def commit_stage(
    ctx: RunContext, state: RunState, beside: Callable[[], Awaitable[None]] | None = None
) -> RunState:
    """One git commit of everything the run wrote; the search index meanwhile. Just
    before it, the run makes sure again that it is still the one writer: the lock may
    have been lost while it indexed (then what it recorded and wrote is put back).
    ``beside``: the event loop's own work to do while git runs (once git has started)."""
    await run_io(ctx.guard, state.recorded)
    written, deleted = state.written, [d.path for d in state.result.deleted]
    ctx.progress("stage", name="commit", total=0)
    # Tasks start in the order they are made: git first, the run's last wait. The search
    # index is not versioned: it is brought up to date while git commits (git is a
    # process of its own; two Python threads would only take turns), and so is
    # ``beside``. (Started first, the search index's thread held git's back 3-11 ms
    # beside two busy processes.)
    committing = asyncio.ensure_future(run_io(commit_all, ctx.kb, commit_message(state.result)))
    search = (
        asyncio.ensure_future(run_io(update_search, ctx.kb, written, deleted))
        if written or deleted
        else None
    )
    other = asyncio.ensure_future(beside()) if beside is not None else None
    try:
        commit = await committing
        await run_io(finish_journal, ctx.kb)
    finally:
        for task in (search, other):
            if task is not None:
                await task
    return replace(state, result=replace(state.result, commit=commit))
