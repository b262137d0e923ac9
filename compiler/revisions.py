"""The one point where identity meets a run: a document read and redacted is given its
raw/ slug here, the slug of the source it revises when compiler/identity.py finds one."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from compiler.classify import Target
from compiler.identity import Ambiguous, Match
from compiler.identity_index import Arrival, SourceIndex
from compiler.intake import Pending, still_pending
from compiler.result import CompileResult, MaybeRevision, Revision
from compiler.sources import Source
from compiler.work import Work, allocate_work
from kb_ai.errors import UsageError
from kb_ai.llm import LLM
from kb_ai.settings import Settings
from wiki import KnowledgeBase


def allocate_source(
    src: Source,
    known: dict[str, Any],
    taken: set[str],
    index: SourceIndex,
    result: CompileResult,
    *,
    arrival: Arrival | None = None,
    in_run: set[str],
) -> Work:
    """The work of ``src``: under the raw slug of the source it revises, its own earlier
    one, or a new one. ``in_run``: the raw paths this run compiles already (a document
    is not a second revision of a source in the same run); raises UnknownSourceError
    for a revises or kb-id that names no source."""
    row = known.get(src.origin)
    said = arrival is not None and bool(arrival.revises)
    # a document compiled before keeps its source, unless a person says otherwise
    found = index.identify(src, arrival) if _unknown(row) or said else None
    revises = None
    if isinstance(found, Match) and found.source.raw_path in in_run:
        found = Ambiguous(
            [(found.source, found.similarity or 1.0)],
            "this run compiles another revision of it",
        )
    if isinstance(found, Match):
        revises = (found.source.raw_path, index.articles_of(found.source.raw_path))
    w = allocate_work(src, known, taken, revises)
    old = row["raw_path"] if row is not None else None
    if (
        old
        and old != w.raw_path
        and not any(r["raw_path"] == old for o, r in known.items() if o != src.origin)
    ):  # said to revise another source: its own copy from before goes after the run
        result.superseded.append((old, w.raw_path))
    in_run.add(w.raw_path)
    index.remember(w.raw_path, src, arrival.name if arrival else "")
    if isinstance(found, Match):
        result.revisions.append(Revision(src.origin, w.raw_path, found.way, found.similarity))
    elif isinstance(found, Ambiguous):
        candidates = tuple((k.raw_path, s) for k, s in found.candidates if k.raw_path != w.raw_path)
        if candidates:
            result.maybe_revisions.append(
                MaybeRevision(src.origin, w.raw_path, candidates, found.reason)
            )
    return w


def _unknown(row: Any) -> bool:
    return row is None or not row["raw_path"]


def said_revises(
    paths: Sequence[str | Path], pending: Sequence[Pending], revises: str
) -> dict[str, Arrival]:
    """``kb-ai compile --revises ID``: the arrival of the one document it names."""
    if len(pending) > 1:
        raise UsageError(
            f"--revises names the source one document revises, and {len(pending)} were "
            f"given ({', '.join(str(p) for p in paths)})",
            hint="compile that one file with --revises, and the others without it",
        )
    return {item.origin: Arrival(revises=revises) for item in pending}


def pending_told(
    sources: Sequence[Source],
    known: dict[str, Any],
    result: CompileResult,
    arrivals: dict[str, Arrival],
    *,
    force: bool,
) -> list[Source]:
    """The sources to compile: those state.db does not know as compiled, and every one
    a person says revises a source (the same text again, now said to be a revision)."""
    said = {s.origin for s in sources if arrivals.get(s.origin, Arrival()).revises}
    rest = [s for s in sources if s.origin not in said]
    kept = {s.origin for s in still_pending(rest, known, result, force=force)}
    return [s for s in sources if s.origin in said or s.origin in kept]


def keep_articles(w: Work, targets: list[Target], by_path: dict[str, Any]) -> list[Target]:
    """A revision that fed one article keeps feeding it: a new article classify
    proposes instead (a retitled revision) is that article, so its path stays."""
    if not w.revision or len(w.previous_articles) != 1:
        return targets
    (old,) = w.previous_articles
    entry = by_path.get(old)
    if entry is None or any(t.path == old for t in targets):
        return targets
    new = [t for t in targets if not t.exists]
    if not new:
        return targets
    kept = Target(old, entry.title, entry.type, exists=True)
    return [kept if t is new[0] else t for t in targets]


async def retire_superseded(
    kb: KnowledgeBase,
    settings: Settings,
    result: CompileResult,
    llm_factory: Callable[..., LLM],
    started_by: str,
) -> None:
    """Remove the raw copies the run's revisions replaced (a document first compiled as
    a new source, then said to revise another): their articles lose them, in a commit
    of its own after the run's."""
    from compiler.removal import Removed, remove_sources

    if not result.superseded or not result.commit or settings.review:
        return
    # (the origin is a label: the file compiled into it now feeds the source it revises)
    gone = [Removed(f"its document, now {new}", old) for old, new in result.superseded]
    removal = await remove_sources(
        kb, settings, gone, reason="a revision of another source replaced it",
        llm_factory=llm_factory, started_by=started_by,
    )  # fmt: skip
    result.commit = removal.commit or result.commit
