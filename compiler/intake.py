"""What a run has to compile: the sources whose checksum state.db does not know as
compiled (all of them when forced). Files are hashed here; reading them waits for the
run, so the first source goes to the model while the next ones are read."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from contextlib import closing
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from compiler.documents import (
    ArchiveLimits,
    ConvertProcess,
    convert_options,
    fetch_policy,
    fetch_url,
    is_url,
    read_member,
)
from compiler.result import CompileResult, Failure
from compiler.sessions import increment
from compiler.sources import Candidate, Source, discover, file_checksum, read_source
from kb_ai.errors import KbAiError
from kb_ai.settings import Settings
from wiki import KnowledgeBase, all_sources, open_state


@dataclass(frozen=True)
class Unread:
    """A changed file, hashed but not read yet: read when the run reaches it."""

    origin: str
    checksum: str
    read: Callable[[], Source]


Pending = Source | Unread


def is_current(row: Any, checksum: str) -> bool:
    """Whether a source's state row says it is compiled at this checksum."""
    return row is not None and row["checksum"] == checksum and row["status"] == "ok"


def pending_files(
    candidates: Sequence[Candidate],
    known: dict,
    settings: Settings,
    result: CompileResult,
    *,
    force: bool,
    converter: ConvertProcess | None = None,
) -> list[Pending]:
    """The candidates to compile, unread; the unchanged go to ``result.skipped`` and the
    unreadable (missing, too large) to ``result.failed``."""
    pending: list[Pending] = []
    for cand in candidates:
        try:
            if cand.url:
                fetched = fetch_url(cand.url, fetch_policy(settings))
                cand = Candidate(Path(fetched.filename), cand.origin)
                checksum, data = hashlib.sha256(fetched.data).hexdigest(), fetched.data
            else:
                checksum, data = candidate_bytes(cand, settings)
        except KbAiError as exc:
            result.failed.append(Failure(cand.origin, str(exc)))
            continue
        if not force and is_current(known.get(cand.origin), checksum):
            result.skipped.append(cand.origin)
            continue
        try:  # an agent session is known by its session id, and compiles what is new
            part = increment(
                data, str(cand.path), {} if force else known, chunk_chars=settings.chunk_chars
            )
        except KbAiError as exc:
            result.failed.append(Failure(cand.origin, str(exc)))
            continue
        if part is not None:
            if part.source is None:
                result.skipped.append(part.key)
            else:
                pending.append(part.source)
            continue
        read = partial(
            read_source,
            cand,
            max_bytes=settings.max_source_bytes,
            chunk_chars=settings.chunk_chars,
            data=data,
            checksum=checksum,
            convert=convert_options(settings, url=cand.origin if is_url(cand.origin) else ""),
            converter=converter,
        )
        pending.append(Unread(cand.origin, checksum, read))
    return pending


def pending_paths(
    kb: KnowledgeBase,
    paths: Iterable[str | Path],
    settings: Settings,
    force: bool,
    converter: ConvertProcess | None,
) -> tuple[list[Pending], CompileResult, dict]:
    """(what to compile, the result so far, the sources state.db knows) of the files and
    folders ``paths`` name; ``converter`` converts their documents."""
    candidates, problems = discover(paths, archive_limits(settings))
    result = CompileResult(failed=[Failure(p, msg) for p, msg in problems])
    with closing(open_state(kb)) as conn:
        known = all_sources(conn)
    pending = pending_files(candidates, known, settings, result, force=force, converter=converter)
    result.sources = len(candidates)
    return pending, result, known


def archive_limits(settings: Settings) -> ArchiveLimits:
    return ArchiveLimits(
        max_members=settings.max_archive_members,
        max_total_bytes=settings.max_archive_bytes,
        max_ratio=settings.max_archive_ratio,
        max_member_bytes=settings.max_document_bytes,
    )


def candidate_bytes(cand: Candidate, settings: Settings) -> tuple[str, bytes]:
    """(sha256, bytes) of a candidate: a file, or a member of a zip archive."""
    checksum, data = file_checksum(
        cand.path,
        settings.max_source_bytes,
        max_transcript_bytes=settings.max_transcript_bytes,
        max_document_bytes=settings.max_document_bytes,
    )
    if not cand.member:
        return checksum, data
    member = read_member(data, str(cand.path), cand.member, archive_limits(settings))
    return hashlib.sha256(member).hexdigest(), member


def still_pending(
    pending: Sequence[Pending], known: dict, result: CompileResult, *, force: bool
) -> list[Pending]:
    """``pending`` without what ``known`` says is compiled (to ``result.skipped``)."""
    still = []
    for item in pending:
        if not force and is_current(known.get(item.origin), item.checksum):
            result.skipped.append(item.origin)
        else:
            still.append(item)
    return still
