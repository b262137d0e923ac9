"""Documents that arrive through the queue (the web upload, a URL submitted to the
server): bytes and the name they came under, into the sources a compile run takes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from compiler.documents.archive import ArchiveLimits, list_members, read_member
from compiler.documents.convert import ConvertOptions, convert_options
from compiler.documents.fetch import is_url
from compiler.documents.formats import DOCUMENT_EXTENSIONS, format_of, supported_summary
from compiler.redact import redact, redact_name
from kb_ai.errors import DocumentError, SourceError

if TYPE_CHECKING:
    from compiler.documents.isolation import ConvertProcess
    from compiler.sources import Source
    from kb_ai.settings import Settings

TEXT_MEMBERS = (".md", ".markdown", ".txt", ".rst")


@dataclass(frozen=True)
class Submitted:
    """What a submitted document gives: its sources, and the members of an archive left
    out, each with why (``(member, error)``, in archive order)."""

    sources: list[Source]
    left_out: list[tuple[str, str]] = field(default_factory=list)


MAX_NAMED = 10  # members named in the error of an archive none of whose members compiled


def submitted_sources(
    origin: str,
    filename: str,
    data: bytes,
    settings: Settings,
    converter: ConvertProcess | None = None,
) -> Submitted:
    """The sources of one submitted document: one, or one per member of a zip archive
    (members that cannot be read are left out, each with its reason; all of them failing
    is an error that names them). ``converter``: converts in a process of its own."""
    from compiler.sources import source_from_document

    options = convert_options(settings, url=origin if is_url(origin) else "")
    if format_of(filename) != "zip":
        return Submitted([source_from_document(origin, filename, data,
                                               chunk_chars=settings.chunk_chars,
                                               options=options, converter=converter)])  # fmt: skip
    limits = ArchiveLimits(
        max_members=settings.max_archive_members,
        max_total_bytes=settings.max_archive_bytes,
        max_ratio=settings.max_archive_ratio,
        max_member_bytes=settings.max_document_bytes,
    )
    sources: list[Source] = []
    left_out: list[tuple[str, str]] = []
    # every file the archive holds is either compiled or said to be left out, and why
    for member in list_members(data, filename, limits, lambda _member: True):
        shown = redact_name(member)  # the name it is known by: in its origin and reports
        if not _wanted(member):
            left_out.append((shown, redact(_unread_reason(member))[0]))
            continue
        try:
            sources.append(_member_source(f"{origin}#{shown}", member, data, filename, limits,
                                          options, settings, converter))  # fmt: skip
        except SourceError as exc:
            left_out.append((shown, redact(str(exc))[0]))
    if not sources:
        named = "; ".join(error for _, error in left_out[:MAX_NAMED])
        more = f" (and {len(left_out) - MAX_NAMED} more)" if len(left_out) > MAX_NAMED else ""
        raise DocumentError(
            f"{filename}: nothing in the archive could be read"
            + (f": {named}{more}" if named else ""),
            cause="no_text",
        )
    return Submitted(sources, left_out)


def _wanted(member: str) -> bool:
    suffix = PurePosixPath(member).suffix.lower()
    return suffix != ".zip" and (suffix in DOCUMENT_EXTENSIONS or suffix in TEXT_MEMBERS)


def _unread_reason(member: str) -> str:
    if PurePosixPath(member).suffix.lower() == ".zip":
        return f"{member}: an archive inside the archive is not opened (unpack it and submit it)"
    return (
        f"{member}: kb-ai does not know this file type, left out (it reads text files and "
        f"{supported_summary()})"
    )


def _member_source(
    origin: str,
    member: str,
    archive: bytes,
    filename: str,
    limits: ArchiveLimits,
    options: ConvertOptions,
    settings: Settings,
    converter: ConvertProcess | None,
) -> Source:
    from compiler.sources import decode_text, source_from_document, source_from_text

    data = read_member(archive, filename, member, limits)
    if format_of(member):
        return source_from_document(origin, member, data, chunk_chars=settings.chunk_chars,
                                    options=options, converter=converter)  # fmt: skip
    text = decode_text(data, member)  # UTF-8 or UTF-16, as a file given to the CLI
    return source_from_text(origin, PurePosixPath(member).stem, text, kind="document",
                            chunk_chars=settings.chunk_chars,
                            max_bytes=settings.max_source_bytes)  # fmt: skip
