"""Intake: the one way in for everything a run compiles.

Files, folders, archives and URLs named on the command line (and a watch's changes),
uploads and URLs queued by the web app, and agent sessions queued by hooks all become
``Incoming`` data (bytes and what they came as) and are read by ``read_pending``: the
datum is detected once, an agent session gives only its new part, anything else its
whole text (compiler/sources.py reads it; compiler/sessions.py cuts the part).

What state.db says is compiled at the same checksum is skipped for the price of a hash
(all of it when forced). Files are hashed here; reading them waits for the run, so the
first source goes to the model while the next ones are read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any

from compiler.discover import TEXT_EXTENSIONS, Candidate, discover, file_checksum
from compiler.documents import (
    ArchiveLimits,
    ConvertProcess,
    compiled_member,
    fetch_policy,
    fetch_url,
    format_of,
    is_url,
    list_members,
    read_member,
)
from compiler.documents.formats import supported_summary
from compiler.identity_index import Arrival
from compiler.redact import redact, redact_name
from compiler.result import CompileResult, Failure
from compiler.sessions import SESSION_FORMATS, increment, key_of_origin, session_checksums
from compiler.sources import (
    Incoming,
    Limits,
    Source,
    detect_checked,
    incoming_file,
    parse_transcript,
    read_incoming,
    session_source,
)
from compiler.state import Pending, RunState, Skipped, Unread
from kb_ai.errors import DocumentError, KbAiError, SourceError, UsageError
from kb_ai.settings import Settings
from wiki import KnowledgeBase, all_sources, open_state

MAX_NAMED = 10  # members named in the error of an archive none of whose members compiled


def read_pending(
    item: Incoming,
    limits: Limits,
    known: Mapping[str, Any],
    *,
    fallback_id: str | None = None,
    converter: ConvertProcess | None = None,
) -> Source | Skipped:
    """The one read of ``item``: detected once; an agent session's part not compiled
    yet (by ``known``), or the whole datum (raises SourceError or DocumentError)."""
    found = detect_checked(item, limits)
    transcript = None
    if found.transcript in SESSION_FORMATS:
        transcript = parse_transcript(item, found)
        part = increment(transcript, known, fallback_id=fallback_id)
        if part is not None:
            if part.part is None:
                return Skipped(part.key, part.reason)
            return session_source(item, part.part, part.origin, transcript.redactions, limits)
    return read_incoming(item, limits, found=found, transcript=transcript, converter=converter)


def is_current(row: Any, checksum: str) -> bool:
    """Whether a source's state row says it is compiled at this checksum."""
    return row is not None and row["checksum"] == checksum and row["status"] == "ok"


# -- paths: files, folders, archives, URLs ------------------------------------------------


def intake_paths(
    kb: KnowledgeBase,
    paths: Iterable[str | Path],
    settings: Settings,
    *,
    force: bool,
    converter: ConvertProcess | None,
    revises: str = "",
) -> RunState:
    """The run's first state: what the files, folders, archives and URLs ``paths`` name
    have to compile (unread), what is unchanged or unusable in its result, and the
    sources state.db knows; ``converter`` converts their documents. ``revises``: the id
    of the source the one document named revises (``kb-ai compile --revises``)."""
    paths = list(paths)
    force = force or bool(revises)  # the same text again, now said to be a revision
    candidates, problems = discover(paths, archive_limits(settings))
    with closing(open_state(kb)) as conn:
        known = all_sources(conn)
    compiled = {} if force else session_checksums(known)
    pending: list[Pending] = []
    failed = [Failure(p, msg) for p, msg in problems]
    skipped: list[str] = []
    for cand in candidates:
        try:
            item = _incoming_candidate(cand, settings)
        except KbAiError as exc:
            failed.append(Failure(cand.origin, str(exc)))
            continue
        checksum = item.checksum
        if not force and is_current(known.get(cand.origin), checksum):
            skipped.append(cand.origin)
        elif checksum in compiled:  # an agent session unchanged since its last part
            skipped.append(compiled[checksum])
        else:
            limits = Limits.of(settings, url=item.url)
            read = partial(_read_unread, item, limits, force=force, converter=converter)
            pending.append(Unread(cand.origin, checksum, read))
    result = CompileResult(sources=len(candidates), skipped=skipped, failed=failed)
    arrivals = said_revises(paths, pending, revises) if revises else {}
    return RunState(result=result, known=known, pending=tuple(pending), arrivals=arrivals)


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


def intake_sources(
    kb: KnowledgeBase,
    sources: Sequence[Source],
    *,
    force: bool,
    arrivals: Mapping[str, Arrival] | None = None,
) -> RunState:
    """The run's first state for sources read already (the queue's, a hook's);
    ``arrivals``: by origin, the file name each came under and what it revises."""
    with closing(open_state(kb)) as conn:
        known = all_sources(conn)
    first = RunState(CompileResult(sources=len(sources)), known, tuple(sources),
                     arrivals=dict(arrivals or {}))  # fmt: skip
    return still_pending(first, known, force=force)


def _read_unread(
    item: Incoming,
    limits: Limits,
    known: Mapping[str, Any],
    *,
    force: bool,
    converter: ConvertProcess | None,
) -> Source | Skipped:
    return read_pending(item, limits, {} if force else known, converter=converter)


def _incoming_candidate(cand: Candidate, settings: Settings) -> Incoming:
    """A candidate's bytes (a file, a member of a zip archive, a fetched URL)."""
    if cand.url:
        fetched = fetch_url(cand.url, fetch_policy(settings))
        return Incoming(cand.origin, fetched.filename, fetched.data, url=cand.url)
    _, data = file_checksum(
        cand.path,
        settings.max_source_bytes,
        max_transcript_bytes=settings.max_transcript_bytes,
        max_document_bytes=settings.max_document_bytes,
    )
    if cand.member:
        data = read_member(data, str(cand.path), cand.member, archive_limits(settings))
    return incoming_file(cand, data)


def archive_limits(settings: Settings) -> ArchiveLimits:
    return ArchiveLimits(
        max_members=settings.max_archive_members,
        max_total_bytes=settings.max_archive_bytes,
        max_ratio=settings.max_archive_ratio,
        max_member_bytes=settings.max_document_bytes,
    )


def still_pending(state: RunState, known: Mapping[str, Any], *, force: bool) -> RunState:
    """``state`` with ``known`` as the sources state.db knows, and without what it says
    is compiled (that goes to the result's skipped), but for every source a person says
    revises another (the same text again, now said to be a revision)."""
    still, skipped = [], []
    said = {o for o, a in state.arrivals.items() if a.revises}
    for item in state.pending:
        current = is_current(known.get(item.origin), item.checksum)
        if not force and item.origin not in said and current:
            skipped.append(item.origin)
        else:
            still.append(item)
    result = replace(state.result, skipped=[*state.result.skipped, *skipped])
    return replace(state, result=result, known=known, pending=tuple(still))


# -- queued tasks: uploads, submitted URLs, agent hooks -----------------------------------


def task_origin(task: Mapping[str, Any]) -> str:
    """A stable origin for a submitted document: the name it was submitted under (an agent
    session, a URL), else its content hash (never a client's file name)."""
    return task.get("origin") or f"submitted:{task['checksum'][:16]}"


def task_incoming(task: Mapping[str, Any], data: bytes) -> Incoming:
    """A queued task as intake reads it. A file is read as it would be from disk (its
    title from its content); pasted text keeps the title it was given."""
    origin = task_origin(task)
    filename = task.get("filename") or ""
    return Incoming(
        origin,
        filename or origin,
        data,
        title="" if filename else task.get("title") or "",
        kind=task.get("kind") or "",
        url=origin if is_url(origin) else "",
    )


@dataclass(frozen=True)
class Submitted:
    """What one queued task gives: its sources (an archive: one per member read), the
    members of an archive left out, each with why (in archive order), and why nothing
    of it compiles now when that is so (an agent session with nothing new)."""

    sources: list[Source]
    left_out: list[tuple[str, str]] = field(default_factory=list)
    skipped: str = ""


def read_task(
    task: Mapping[str, Any],
    data: bytes,
    settings: Settings,
    known: Mapping[str, Any],
    converter: ConvertProcess | None = None,
) -> Submitted:
    """The sources of one queued task (raises SourceError or DocumentError)."""
    item = task_incoming(task, data)
    limits = Limits.of(settings, url=item.url)
    if format_of(item.name) == "zip":
        return _read_archive(item, limits, settings, converter)
    key = key_of_origin(item.origin)
    read = read_pending(item, limits, known, fallback_id=key.rsplit(":", 1)[-1] if key else None,
                        converter=converter)  # fmt: skip
    if isinstance(read, Skipped):
        return Submitted([], skipped=read.reason)
    return Submitted([read])


def _read_archive(
    item: Incoming, limits: Limits, settings: Settings, converter: ConvertProcess | None
) -> Submitted:
    """Each member of a submitted zip archive read (members that cannot be read are left
    out, each with its reason; all of them failing is an error that names them)."""
    bounds = archive_limits(settings)
    sources: list[Source] = []
    left_out: list[tuple[str, str]] = []
    # every file the archive holds is either compiled or said to be left out, and why
    for member in list_members(item.data, item.name, bounds, lambda _member: True):
        shown = redact_name(member)  # the name it is known by: in its origin and reports
        if not compiled_member(member, TEXT_EXTENSIONS):  # as a zip on disk: one list
            left_out.append((shown, redact(_unread_reason(member))[0]))
            continue
        try:
            data = read_member(item.data, item.name, member, bounds)
            inner = Incoming(f"{item.origin}#{shown}", shown, data, url=item.url)
            sources.append(read_incoming(inner, limits, converter=converter))
        except SourceError as exc:
            left_out.append((shown, redact(str(exc))[0]))
    if not sources:
        named = "; ".join(error for _, error in left_out[:MAX_NAMED])
        more = f" (and {len(left_out) - MAX_NAMED} more)" if len(left_out) > MAX_NAMED else ""
        raise DocumentError(
            f"{item.name}: nothing in the archive could be read"
            + (f": {named}{more}" if named else ""),
            cause="no_text",
        )
    return Submitted(sources, left_out)


def _unread_reason(member: str) -> str:
    if PurePosixPath(member).suffix.lower() == ".zip":
        return f"{member}: an archive inside the archive is not opened (unpack it and submit it)"
    return (
        f"{member}: kb-ai does not know this file type, left out (it reads text files and "
        f"{supported_summary()})"
    )
