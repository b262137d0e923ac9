"""Extraction ahead of the compile lock: what a run may do before it holds the lock.

A source's extraction depends on its text, the model and the prompts, never on the wiki,
so a run reads and extracts its sources first and takes the lock only for what does
read the wiki (classify, plan, write, index, commit). Several workers then extract at
the same time; only their writing takes turns.

Nothing here writes to the knowledge base: the raw copy, the extraction record and the
source's slug are settled under the lock (compiler/stages.py), where the run also looks
again at what is compiled already. A run that dies before the lock has only spent model
calls (the response cache keeps them); its sources are still pending.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any

from compiler._tasks import Interruptible, run_io
from compiler.allocate import is_new
from compiler.claims import ExtractionClaims, claim_key
from compiler.extract import Extraction
from compiler.mode import ComposedArticles
from compiler.sessions import compiled_turns, key_of_origin
from compiler.sources import Source
from compiler.state import Pending, RunState, Skipped, Unread
from kb_ai.errors import KbAiError
from kb_ai.llm import LLM
from wiki import ExtractionRecord, KnowledgeBase, read_extraction

#: What reading a pending datum gave: a source, a session with nothing new, or why not.
Read = Source | Skipped | KbAiError


@dataclass(frozen=True)
class Ahead:
    """The extractions a run made before it took the lock, by (origin, checksum), each
    the model's answer or the error it raised; of one model, prompt version and set of
    categories (an answer of another is never used)."""

    model: str = ""
    version: str = ""
    categories: tuple[str, ...] = ()
    done: Mapping[tuple[str, str], Extraction | KbAiError] = field(default_factory=dict)
    read: frozenset[str] = frozenset()  # the origins read (an interrupt stops the rest)

    def of(
        self, source: Source, model: str, mode: ComposedArticles
    ) -> Extraction | KbAiError | None:
        """The extraction made ahead for ``source``, if it fits the run's model and mode."""
        if (model, mode.version, tuple(mode.categories)) != (
            self.model, self.version, self.categories
        ):  # fmt: skip
            return None
        return self.done.get((source.origin, source.checksum))


async def extract_ahead(
    kb: KnowledgeBase,
    model: str,
    mode: ComposedArticles,
    llm: LLM,
    state: RunState,
    tasks: Interruptible,
    progress: Callable[..., None],
    claims: ExtractionClaims | None = None,
) -> tuple[RunState, Ahead]:
    """Every pending source read (in input order) and extracted, each sent to the model
    as soon as it is read; returns ``state`` with its unread data read (the read is kept
    for the run, see :func:`_kept`) and the extractions. ``claims``: with a shared
    database, a text another run is extracting is not sent (compiler/claims.py): it
    is extracted under the lock, from what that run found."""
    progress("stage", name="extract", total=len(state.pending))
    pending: list[Pending] = []
    sources: list[Source] = []
    spawned: list[asyncio.Future] = []
    stopped = 0  # items not read: the run was interrupted before them
    texts: set[str] = set()  # the checksums of the sources sent to the model
    for item in state.pending:
        if tasks.interrupted:
            pending.append(item)
            stopped += 1
            continue
        if isinstance(item, Unread):
            read = await run_io(_read, item, state.known)
            pending.append(_kept(item, read, state.known))
        else:
            read = item
            pending.append(item)
        if (
            not isinstance(read, Source)
            or _copy(read, state.known, texts)  # one document twice: compiled once
            or _stored(kb, state.known, read, model, mode.version)
        ):
            progress("advance", name="extract", item=item.origin)
            continue
        key = claim_key(read, model, mode)
        if claims is not None and not await claims.take(key, wait=False):
            progress("advance", name="extract", item=item.origin)  # another run's now
            continue
        texts.add(read.checksum)
        sources.append(read)
        spawned.append(tasks.spawn(_extract(mode, llm, read, progress, claims, key)))
    outcomes = await tasks.collect(spawned)
    done: dict[tuple[str, str], Extraction | KbAiError] = {}
    for src, task, outcome in zip(sources, spawned, outcomes, strict=True):
        if outcome is None:
            done[(src.origin, src.checksum)] = task.result()
        elif isinstance(outcome, KbAiError):
            done[(src.origin, src.checksum)] = outcome
        # cancelled: the run was interrupted, and says so for it
    read = frozenset(p.origin for p in state.pending[: len(pending) - stopped])
    ahead = Ahead(model, mode.version, tuple(mode.categories), done, read)
    return replace(state, pending=tuple(pending)), ahead


async def _extract(
    mode: ComposedArticles,
    llm: LLM,
    source: Source,
    progress: Callable[..., None],
    claims: ExtractionClaims | None,
    key: str,
) -> Extraction:
    try:
        extraction = await mode.extract(llm, source)
    finally:
        if claims is not None:
            await claims.drop(key)
    progress("advance", name="extract", item=source.origin)
    return extraction


def _read(item: Unread, known: Mapping[str, Any]) -> Read:
    try:
        return item.read(known)
    except KbAiError as exc:
        return exc


def _kept(item: Unread, read: Read, known: Mapping[str, Any]) -> Unread:
    """``item``, read once: the run reads it again only when what it read depends on
    what is compiled (an agent session's new part) and that changed before the lock."""
    key = _session_key(read)

    def again(now: Mapping[str, Any]) -> Source | Skipped:
        if key is not None and compiled_turns(now, key) != compiled_turns(known, key):
            return item.read(now)
        if isinstance(read, KbAiError):
            raise read
        return read

    return Unread(item.origin, item.checksum, again)


def _session_key(read: Read) -> str | None:
    if isinstance(read, Skipped):
        return read.key
    if isinstance(read, Source):
        return key_of_origin(read.origin)
    return None  # an error: reading it again would fail the same way


def _copy(source: Source, known: Mapping[str, Any], texts: set[str]) -> bool:
    """Whether the run compiles ``source`` as a copy of another (compiler/allocate.py)."""
    return is_new(source, known) and source.checksum in texts


def previous_extraction(kb: KnowledgeBase, slug: str) -> ExtractionRecord | None:
    """The stored extraction of a source, or None when it is missing or unreadable."""
    try:
        return read_extraction(kb, f"extraction/{slug}.md")
    except (KbAiError, OSError, UnicodeDecodeError):  # gone or damaged: extract again
        return None


def is_current(old: ExtractionRecord | None, source: Source, model: str, version: str) -> bool:
    """Whether ``old`` is the extraction of this text by this model and prompt version
    (a run that failed after extracting paid for it): reused, not asked again."""
    return old is not None and (old.source_checksum, old.model, old.prompt_version) == (
        source.checksum, model, version
    )  # fmt: skip


def _stored(
    kb: KnowledgeBase, known: Mapping[str, Any], source: Source, model: str, version: str
) -> bool:
    """Whether the source's extraction on disk is current (:func:`is_current`)."""
    row = known.get(source.origin)
    raw = row["raw_path"] if row is not None else None
    if not raw or not (kb.root / f"extraction/{PurePosixPath(raw).stem}.md").is_file():
        return False
    return is_current(previous_extraction(kb, PurePosixPath(raw).stem), source, model, version)
