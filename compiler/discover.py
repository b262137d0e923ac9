"""Discovery: the files (and zip members, and URLs) that the paths a run is given name,
and a file's bytes read under its size limit. Nothing here reads a source (that is
compiler/sources.py): a .json/.jsonl/.traj file in a folder, and a file over
max_source_bytes, are only peeked at (their head) to tell whether they are transcripts."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from compiler.documents import (
    ArchiveLimits,
    archive_members,
    format_of,
    is_url,
    wanted_in_folder,
)
from compiler.origins import origin_of
from compiler.redact import redact_name
from compiler.transcripts import HEAD_BYTES, detect
from kb_ai.errors import SourceError

# Extensions picked up when a directory is given. A file named explicitly is read
# whatever its extension, as long as it is text.
TEXT_EXTENSIONS = frozenset(
    {
        ".md",
        ".markdown",
        ".mdown",
        ".mkd",
        ".txt",
        ".text",
        ".rst",
        ".adoc",
        ".asciidoc",
        ".org",
        ".textile",
        ".wiki",
    }
)
# Picked up from a directory only when their content is a transcript kb-ai can read
# (a .jsonl of metrics or a package.json is not a source).
TRANSCRIPT_EXTENSIONS = frozenset({".jsonl", ".json", ".traj"})


@dataclass(frozen=True)
class Candidate:
    """A file found on disk, not read yet (reading is deferred so unchanged files cost a hash)."""

    path: Path
    origin: str
    member: str = ""  # a file inside the archive at ``path`` (compiler/documents)
    url: str = ""  # the page to fetch, as given (``origin`` is it redacted)


def discover(
    paths: Iterable[str | Path], archive_limits: ArchiveLimits | None = None
) -> tuple[list[Candidate], list[tuple[str, str]]]:
    """Expand the given files and directories into candidates.

    Returns (candidates in a stable order, problems as (path, message)). A directory
    contributes its text files (hidden files and directories skipped); a file given by
    name is always a candidate, a link too. Inside a directory, links are followed only
    while they stay in it: one leading out is reported, not read.
    """
    found: dict[str, Candidate] = {}
    problems: list[tuple[str, str]] = []
    for raw in paths:
        if is_url(str(raw)):  # fetched when the run hashes its sources (compiler/intake)
            found.setdefault(
                redact_name(str(raw)), Candidate(Path("url"), redact_name(str(raw)), url=str(raw))
            )
            continue
        p = Path(raw).expanduser()
        if not p.exists():
            problems.append((str(raw), f"{raw}: no such file or directory"))
            continue
        if p.is_dir():
            files = sorted(_walk(p, problems))
            if not files:
                exts = ", ".join(sorted(TEXT_EXTENSIONS)[:6])
                problems.append(
                    (str(raw), f"{raw}: nothing to compile here (looked for {exts}, ...)")
                )
            for f in files:
                origin = origin_of(f)
                if f.suffix.lower() == ".zip":
                    _add_archive(f, found, problems, archive_limits or ArchiveLimits())
                else:
                    found.setdefault(origin, Candidate(f, origin))
        elif p.is_file():
            origin = origin_of(p)
            if p.suffix.lower() == ".zip":
                _add_archive(p, found, problems, archive_limits or ArchiveLimits())
            else:
                found.setdefault(origin, Candidate(p, origin))
        else:
            problems.append((str(raw), f"{raw}: not a regular file"))
    return list(found.values()), problems


def _add_archive(
    path: Path, found: dict[str, Candidate], problems: list[tuple[str, str]], limits: ArchiveLimits
) -> None:
    """Each member of a zip archive worth compiling, as a candidate of its own."""
    try:
        for member in archive_members(path, limits, TEXT_EXTENSIONS):
            origin = origin_of(path, member)
            found.setdefault(origin, Candidate(path, origin, member))
    except SourceError as exc:
        problems.append((str(path), str(exc)))


def _walk(root: Path, problems: list[tuple[str, str]]) -> Iterator[Path]:
    """The source files under ``root``. Linked folders are not entered (os.walk), and a
    linked file whose target is outside ``root`` goes to ``problems`` unread."""
    top = root.resolve()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            path = Path(dirpath) / name
            suffix = path.suffix.lower()
            if name.startswith(".") or not path.is_file():
                continue  # a broken link or a loop is not a file either
            if not (
                suffix in TEXT_EXTENSIONS
                or wanted_in_folder(path)
                or (suffix in TRANSCRIPT_EXTENSIONS and _is_transcript(path))
            ):
                continue
            if path.is_symlink() and not Path(os.path.realpath(path)).is_relative_to(top):
                problems.append((str(path), _outside_link(path, root)))
            else:
                yield path


def _outside_link(path: Path, root: Path) -> str:
    target = os.path.realpath(path)
    return (
        f"{path}: a link to {target}, outside {root}: not followed (links out of a folder "
        "are skipped; name the file itself on the command line to compile it)"
    )


def _is_transcript(path: Path) -> bool:
    """Whether a file's first bytes are a transcript (read cheaply: its head only)."""
    try:
        with path.open("rb") as f:
            head = f.read(HEAD_BYTES)
    except OSError:
        return False
    return detect(head, path.name) is not None


def file_checksum(
    path: Path,
    max_bytes: int,
    *,
    max_transcript_bytes: int | None = None,
    max_document_bytes: int | None = None,
) -> tuple[str, bytes]:
    """(sha256, bytes) of a file, refusing files over max_bytes before reading them
    (a document: over ``max_document_bytes``, when given).

    A transcript (recognised by its head) may be larger, up to ``max_transcript_bytes``:
    a Claude Code session is easily several MB of JSON, most of it tool output that
    normalising drops, so its text ends up a small fraction of its bytes.
    """
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise SourceError(f"{path}: cannot read it ({exc.strerror})") from exc
    limit, setting = max_bytes, "max_source_bytes"
    if max_document_bytes is not None and format_of(path.name):
        # a document has a limit of its own, larger or smaller; its text is held to
        # max_source_bytes once converted (compiler/documents/convert.py)
        limit, setting = max_document_bytes, "max_document_bytes"
    elif size > max_bytes and (max_transcript_bytes or 0) > max_bytes and _is_transcript(path):
        limit, setting = max_transcript_bytes or 0, "max_transcript_bytes"
    if size > limit:
        raise SourceError(
            f"{path}: {size:,} bytes is over the {limit:,}-byte limit ({setting})",
            hint=f"split it, or raise {setting} in kb-ai.toml",
        )
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SourceError(f"{path}: cannot read it ({exc.strerror})") from exc
    return hashlib.sha256(data).hexdigest(), data
