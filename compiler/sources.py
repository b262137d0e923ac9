"""Sources: find the files to compile, read them safely, normalise them to text, chunk them.

Every way a file can be unusable (missing, binary, empty, too large, not UTF-8) becomes a
SourceError with a message that says what to do; the run reports it and goes on.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from compiler.documents import (
    ArchiveLimits,
    ConvertOptions,
    archive_members,
    format_of,
    is_url,
    prepare_document,
    supported_summary,
    wanted_in_folder,
)
from compiler.origins import origin_of
from compiler.redact import redact, redact_name
from compiler.transcripts import HEAD_BYTES, TranscriptError, detect, parse
from compiler.transcripts.chunks import pack_turns
from kb_ai.errors import DocumentError, SourceError, UsageError

if TYPE_CHECKING:
    from compiler.documents.isolation import ConvertProcess

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
KIND_BY_EXTENSION = {".md": "note", ".markdown": "note", ".txt": "note", ".rst": "document"}
# Picked up from a directory only when their content is a transcript kb-ai can read
# (a .jsonl of metrics or a package.json is not a source).
TRANSCRIPT_EXTENSIONS = frozenset({".jsonl", ".json", ".traj"})

_FILE_SUFFIXES = TEXT_EXTENSIONS | TRANSCRIPT_EXTENSIONS

_BINARY_HINT = "kb-ai reads text files and the documents kb-ai compile --help lists"
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.M)
_RST_TITLE = re.compile(r"^(?:([=\-~^*#+])\1{2,}\n)?(\S[^\n]*)\n([=\-~^*#+])\3{2,}\s*$", re.M)


@dataclass(frozen=True)
class Source:
    """One input, read and normalised."""

    origin: str  # where it came from: a resolved path, or a name given by the caller
    title: str
    kind: str  # note | document | transcript
    text: str  # normalised: UTF-8, \n line ends, no BOM
    checksum: str  # sha256 of the original bytes
    size: int = 0
    chunks: list[str] = field(default_factory=list)
    redactions: int = 0  # secrets and <private> spans removed from text
    original: bytes = b""  # a converted document's own bytes, kept beside it in raw/
    original_suffix: str = ""  # its extension (".pdf")

    def __post_init__(self) -> None:
        # however it was made, a source is known by names without secrets (its text is
        # redacted by what reads it, which counts what it removed)
        object.__setattr__(self, "origin", redact_name(self.origin))
        object.__setattr__(self, "title", redact_name(self.title))


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


def decode_text(data: bytes, name: str) -> str:
    """Text with normalised line ends, or a SourceError saying why not. UTF-8, or UTF-16
    with a byte order mark or recognised by its NUL bytes (what Windows tools write)."""
    if not data.strip():
        raise SourceError(f"{name}: the file is empty")
    encoding = _utf16(data) or "utf-8"
    if encoding == "utf-8" and b"\x00" in data[:8192]:
        raise SourceError(f"{name}: looks like a binary file", hint=_BINARY_HINT)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise SourceError(
            f"{name}: not valid {encoding.upper()[:6]} (byte {exc.start})",
            hint="convert it first, e.g. iconv -f latin1 -t utf-8",
        ) from exc
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    controls = sum(1 for ch in text[:8192] if ord(ch) < 32 and ch not in "\n\t\f\v")
    if controls > 0.05 * min(len(text), 8192):
        raise SourceError(f"{name}: looks like a binary file", hint=_BINARY_HINT)
    if not text.strip():
        raise SourceError(f"{name}: the file is empty")
    return text


def _utf16(data: bytes) -> str | None:
    """The UTF-16 codec ``data`` is in, or None: a byte order mark says so; without one,
    text of mostly ASCII characters has NUL in every other byte (high bytes of UTF-16LE,
    low bytes of UTF-16BE), and nowhere else."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"  # the codec reads the mark and drops it
    head = data[:4096]
    pairs = len(head) // 2
    if pairs < 2 or len(data) % 2:
        return None
    even, odd = head[0 : 2 * pairs : 2], head[1 : 2 * pairs : 2]
    for zeros, other, codec in ((odd, even, "utf-16-le"), (even, odd, "utf-16-be")):
        if zeros.count(0) >= 0.6 * pairs and other.count(0) == 0:
            return codec
    return None


def guess_title(text: str, fallback: str) -> str:
    """The first heading of ``text``, else its first line when it reads like a title,
    else ``fallback`` (a file name) made readable; a heading with no letter or digit
    (a rule, an emoji) is no title. "Untitled" only when there is no name at all.
    Redacted before it is cleaned: "ghp_..." loses no "_" to hide in."""
    text, fallback = redact(text[:4000])[0], redact_name(fallback)
    for pattern, group in ((_HEADING, 2), (_RST_TITLE, 2)):
        for m in pattern.finditer(text):
            if _has_word(m.group(group)):
                return _clean_title(m.group(group))
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if 0 < len(first) <= 80 and not first.endswith((".", ",", ";", ":")) and _has_word(first):
        return _clean_title(first)
    stem = re.sub(r"[-_]+", " ", fallback).strip()
    return stem[:1].upper() + stem[1:] if stem else "Untitled"


def _clean_title(title: str) -> str:
    return re.sub(r"[*_`]+", "", title).strip()[:120] or "Untitled"


def _has_word(text: str) -> bool:
    return re.search(r"[^\W_]", re.sub(r"[*_`]+", "", text)) is not None


# What tools write into a document's title field when nobody gave it one.
_PLACEHOLDER_TITLE = re.compile(
    r"(?:untitled|untitled document|document\s*\d*|title|no title|new document|"
    r"microsoft (?:word|powerpoint|excel) - .*|.*\.(?:docx?|pdf|dvi|pptx?|xlsx?|tex|odt|rtf))"
    r"(?:[\s_-]*\d+)?",
    re.I,
)


def document_title(title: str, text: str, name: str) -> str:
    """A document's title: its metadata title unless that is a placeholder ("Untitled",
    "Microsoft Word - x.docx", a file name), else its first heading or its file name."""
    meta = title.strip()
    if meta and _has_word(meta) and not _PLACEHOLDER_TITLE.fullmatch(meta):
        return meta
    return guess_title(text, Path(name).stem)


def chunk_text(text: str, limit: int) -> list[str]:
    """Split text into pieces of at most ``limit`` characters, at headings, then paragraphs,
    then lines, so no piece ends mid-sentence when it can be helped."""
    if len(text) <= limit:
        return [text]
    for splitter in (r"\n(?=#{1,3} )", r"\n\s*\n", r"\n"):
        parts = re.split(splitter, text)
        if len(parts) > 1:
            break
    else:
        return [text[i : i + limit] for i in range(0, len(text), limit)]
    chunks: list[str] = []
    current = ""
    for part in parts:
        if len(part) > limit:
            if current:
                chunks.append(current)
                current = ""
            chunks.extend(chunk_text(part, limit))
            continue
        joined = f"{current}\n\n{part}" if current else part
        if len(joined) > limit:
            chunks.append(current)
            current = part
        else:
            current = joined
    if current:
        chunks.append(current)
    return [c for c in chunks if c.strip()]


def read_source(
    candidate: Candidate,
    *,
    max_bytes: int,
    chunk_chars: int,
    data: bytes | None = None,
    checksum: str | None = None,
    max_transcript_bytes: int | None = None,
    convert: ConvertOptions | None = None,
    converter: ConvertProcess | None = None,
) -> Source:
    """Read one candidate into a normalised Source (raises SourceError).

    A transcript (recognised by content, whatever the file is called) becomes its
    normalised Markdown, kind "transcript". Every text is redacted before it is returned:
    nothing downstream (raw/, the model) sees a secret or a <private> span.
    """
    if data is None or checksum is None:
        checksum, data = file_checksum(
            candidate.path, max_bytes, max_transcript_bytes=max_transcript_bytes
        )
    name = redact_name(candidate.member or str(candidate.path))  # in errors and titles too
    if format_of(name):  # a document: converted (compiler/documents)
        return source_from_document(
            candidate.origin, name, data, chunk_chars=chunk_chars, options=convert,
            converter=converter,
        )  # fmt: skip
    text = _decode_known(data, name)
    kind = KIND_BY_EXTENSION.get(Path(name).suffix.lower(), "document")
    title = ""
    text, kind, title, found = _as_transcript(
        text, name, kind, file_date=None if candidate.member else _file_day(candidate.path)
    )
    text, redacted = redact(text)
    title = title or guess_title(text, Path(name).stem)
    return Source(
        origin=candidate.origin,
        title=redact(title)[0],
        kind=kind,
        text=text,
        checksum=checksum,
        size=len(data),
        chunks=pack_turns(text, chunk_chars)
        if kind == "transcript"
        else chunk_text(text, chunk_chars),
        redactions=found + redacted,
    )


def source_from_document(
    origin: str,
    name: str,
    data: bytes,
    *,
    chunk_chars: int,
    options: ConvertOptions | None = None,
    converter: ConvertProcess | None = None,
) -> Source:
    """The Source of the document ``name`` (a PDF, a deck, ...): converted text with its
    markers, split by its sections, its own bytes kept for raw/ (raises DocumentError).
    ``converter``: converts it in a process of its own, under a time limit."""
    doc = prepare_document(
        name, data, chunk_chars=chunk_chars, options=options, converter=converter
    )
    return Source(
        origin=origin,
        title=redact(document_title(doc.title, doc.title_text(), name))[0],
        kind="document",
        text=doc.text,
        checksum=hashlib.sha256(data).hexdigest(),
        size=len(data),
        chunks=doc.chunks,
        redactions=doc.redactions,
        original=data,
        original_suffix=Path(name).suffix.lower(),
    )


def _decode_known(data: bytes, name: str) -> str:
    """decode_text, saying "unknown type" for a binary file under an extension kb-ai does
    not read (random bytes, an image), rather than "not text"."""
    try:
        return decode_text(data, name)
    except SourceError as exc:
        if not data.strip() or Path(name).suffix.lower() in _FILE_SUFFIXES:
            raise
        raise DocumentError(
            f"{name}: kb-ai does not know this file type",
            cause="unsupported",
            hint=f"it reads text files and {supported_summary()}",
        ) from exc


def _file_day(path: Path) -> str | None:
    """The day a file was last written (ISO, UTC): the date of a capture that has none."""
    from datetime import UTC, datetime

    try:
        return datetime.fromtimestamp(path.stat().st_mtime, UTC).date().isoformat()
    except (OSError, ValueError, OverflowError):
        return None


def _as_transcript(
    text: str, name: str, kind: str, *, file_date: str | None = None
) -> tuple[str, str, str, int]:
    """(text, kind, title, redactions): a transcript normalised, anything else as it was."""
    if detect(text, name) is None:
        return text, kind, "", 0
    try:
        transcript = parse(text, name, file_date=file_date)
    except (TranscriptError, ValueError) as exc:
        raise SourceError(f"{name}: looks like a transcript but cannot be read ({exc})") from exc
    if transcript.is_empty():
        raise SourceError(
            f"{name}: the transcript holds no conversation (only local commands or metadata)",
            hint="nothing to compile here; leave it out",
        )
    return transcript.to_text(), "transcript", transcript.title, transcript.redactions


def source_from_text(
    origin: str,
    title: str,
    text: str,
    *,
    kind: str = "note",
    chunk_chars: int,
    max_bytes: int,
) -> Source:
    """A Source from text handed over directly (the web form, a hook).

    A transcript handed over this way (an agent hook's session file) is recognised and
    normalised like a file's; the text is redacted either way.
    """
    origin, title = redact_name(origin), redact_name(title.strip())[:120]
    data = text.encode("utf-8")
    if len(data) > max_bytes:
        raise SourceError(
            f"{origin}: {len(data):,} bytes is over the {max_bytes:,}-byte limit",
            hint="split it, or raise max_source_bytes in kb-ai.toml",
        )
    if not origin:
        raise UsageError("a source needs a name")
    clean = decode_text(data, origin)
    clean, kind, found_title, found = _as_transcript(clean, origin, kind)
    clean, redacted = redact(clean)
    if found_title and (not title or Path(title).suffix.lower() in _FILE_SUFFIXES):
        title = found_title  # a transcript's first request says more than its file name
    title = title or guess_title(clean, origin)
    return Source(
        origin=origin,
        title=redact(title)[0],
        kind=kind,
        text=clean,
        checksum=hashlib.sha256(data).hexdigest(),
        size=len(data),
        chunks=pack_turns(clean, chunk_chars)
        if kind == "transcript"
        else chunk_text(clean, chunk_chars),
        redactions=found + redacted,
    )
