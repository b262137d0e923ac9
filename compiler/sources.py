"""Sources: bytes that came in, however they came, read once into normalised text.

One way in (``read_incoming``) for a file, a member of an archive, an upload, a queued
task, a fetched page and an agent hook's session: the format is detected once (a
document by its name; else the text is decoded and looked at once for a transcript),
the text is normalised once, and redacted in one place (``_text_source``; documents in
compiler/documents/prepare.py) before anything downstream sees it.

Every way a datum can be unusable (binary, empty, too large, not UTF-8) becomes a
SourceError with a message that says what to do; the run reports it and goes on.
"""

from __future__ import annotations

import codecs
import hashlib
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from compiler.discover import TEXT_EXTENSIONS, TRANSCRIPT_EXTENSIONS, Candidate, file_checksum
from compiler.documents import ConvertOptions, format_of, prepare_document, supported_summary
from compiler.redact import redact, redact_name
from compiler.transcripts import Transcript, TranscriptError, detect, parse
from compiler.transcripts.chunks import pack_turns
from kb_ai.errors import DocumentError, SourceError, UsageError

if TYPE_CHECKING:
    from compiler.documents.isolation import ConvertProcess

KIND_BY_EXTENSION = {".md": "note", ".markdown": "note", ".txt": "note", ".rst": "document"}
_FILE_SUFFIXES = TEXT_EXTENSIONS | TRANSCRIPT_EXTENSIONS

# characters below 32 but tab, line feed, vertical tab and form feed (no CR is left)
_CONTROLS = re.compile("[\x00-\x08\x0d-\x1f]")
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
class Incoming:
    """Bytes to compile and what they came as: the one input the intake reads."""

    origin: str  # its identity: a resolved path (#member), a URL, submitted:<hash>, ...
    name: str  # the name its format is judged by: a file's, a member's, an upload's
    data: bytes
    title: str = ""  # a title a person gave it (pasted text); else its content's own
    kind: str = ""  # a kind a person gave it (note, document, transcript); else by name
    file_date: str | None = None  # the day its file was written: dates a capture
    url: str = ""  # the page it was fetched from

    @cached_property
    def checksum(self) -> str:  # hashed once: intake and the deferred read both ask
        return hashlib.sha256(self.data).hexdigest()


@dataclass(frozen=True)
class Detected:
    """What an incoming datum is, found once: a document format (by its name), or its
    decoded text and the transcript format of that text (None: plain text)."""

    document: str | None = None
    text: str = ""
    transcript: str | None = None


@dataclass(frozen=True)
class Limits:
    """The size limits and chunking of a run's settings, as reading needs them."""

    chunk_chars: int = 24_000
    max_source_bytes: int = 5_000_000
    max_transcript_bytes: int = 50_000_000
    max_document_bytes: int = 50_000_000
    convert: ConvertOptions | None = None

    def largest(self) -> tuple[int, str]:
        """The largest of the size limits, and its setting."""
        return max(
            (self.max_source_bytes, "max_source_bytes"),
            (self.max_transcript_bytes, "max_transcript_bytes"),
            (self.max_document_bytes, "max_document_bytes"),
        )

    @classmethod
    def of(cls, settings, *, url: str = "") -> Limits:  # noqa: ANN001 - Settings
        from compiler.documents import convert_options

        return cls(
            chunk_chars=settings.chunk_chars,
            max_source_bytes=settings.max_source_bytes,
            max_transcript_bytes=settings.max_transcript_bytes,
            max_document_bytes=settings.max_document_bytes,
            convert=convert_options(settings, url=url),
        )


def detect_incoming(item: Incoming) -> Detected:
    """The one detection of ``item`` (raises SourceError for binary or empty data)."""
    fmt = format_of(item.name)
    if fmt:
        return Detected(document=fmt)
    # handed over as text of a kind (an upload, a hook): not text says why; a file of an
    # extension kb-ai does not read is of an unknown type
    text = decode_text(item.data, item.name) if item.kind else _decode_known(item.data, item.name)
    return Detected(text=text, transcript=detect(text, item.name))


def detect_checked(item: Incoming, limits: Limits) -> Detected:
    """``detect_incoming``, refusing data over its limit (over every limit: before it is
    decoded)."""
    _refuse_over(item, *limits.largest())
    found = detect_incoming(item)
    _check_size(item, found, limits)
    return found


def parse_transcript(item: Incoming, found: Detected) -> Transcript:
    """The transcript ``found`` names, parsed once (raises SourceError)."""
    try:
        return parse(found.text, item.name, fmt=found.transcript, file_date=item.file_date)
    except (TranscriptError, ValueError) as exc:
        raise SourceError(
            f"{item.name}: looks like a transcript but cannot be read ({exc})"
        ) from exc


def read_incoming(
    item: Incoming,
    limits: Limits,
    *,
    found: Detected | None = None,
    transcript: Transcript | None = None,
    converter: ConvertProcess | None = None,
) -> Source:
    """``item`` read into a normalised, redacted Source (raises SourceError).

    ``found`` and ``transcript``: what detection and parsing gave already (each is done
    once); a transcript becomes its normalised Markdown, kind "transcript"."""
    if found is None:
        found = detect_checked(item, limits)
    if found.document:  # a document: converted (compiler/documents)
        return source_from_document(
            item.origin, item.name, item.data, chunk_chars=limits.chunk_chars,
            options=limits.convert, converter=converter,
        )  # fmt: skip
    if found.transcript is None:
        kind = item.kind or KIND_BY_EXTENSION.get(Path(item.name).suffix.lower(), "document")
        # redacted once, here: the title is looked for in the redacted text
        text, redacted = redact(found.text)
        title = item.title.strip()[:120] or _title_of(text, redact_name(Path(item.name).stem))
        return _text_source(item, text, kind, title, redacted, limits, redacted=True)
    tr = transcript or parse_transcript(item, found)
    if tr.is_empty():
        raise SourceError(
            f"{item.name}: the transcript holds no conversation (only local commands or metadata)",
            hint="nothing to compile here; leave it out",
        )
    given = item.title.strip()[:120]
    # a transcript's first request says more than its file name
    title = tr.title if not given or Path(given).suffix.lower() in _FILE_SUFFIXES else given
    return _text_source(item, tr.to_text(), "transcript", title, tr.redactions, limits)


def session_source(
    item: Incoming, part: Transcript, origin: str, redactions: int, limits: Limits
) -> Source:
    """The Source of one part of an agent session (compiler/sessions.py) under
    ``origin``; ``redactions``: what parsing the whole session removed."""
    return _text_source(
        Incoming(origin, item.name, item.data), part.to_text(), "transcript", part.title,
        redactions, limits,
    )  # fmt: skip


def _text_source(
    item: Incoming,
    text: str,
    kind: str,
    title: str,
    found: int,
    limits: Limits,
    *,
    redacted: bool = False,
) -> Source:
    """The one place text becomes a Source: redacted here (unless the caller says it did
    that, ``redacted``), so nothing downstream (raw/, the model) sees a secret or a
    <private> span. ``found``: redactions made already."""
    removed = 0
    if not redacted:
        text, removed = redact(text)
    return Source(
        origin=item.origin,
        title=redact(title)[0] or "Untitled",
        kind=kind,
        text=text,
        checksum=item.checksum,
        size=len(item.data),
        chunks=pack_turns(text, limits.chunk_chars)
        if kind == "transcript"
        else chunk_text(text, limits.chunk_chars),
        redactions=found + removed,
    )


def _check_size(item: Incoming, found: Detected, limits: Limits) -> None:
    """Refuse data over its limit: a document's, a transcript's, or any source's (a
    file's size was checked before it was read, by the same rule)."""
    if found.document:
        limit, setting = limits.max_document_bytes, "max_document_bytes"
    elif found.transcript and limits.max_transcript_bytes > limits.max_source_bytes:
        limit, setting = limits.max_transcript_bytes, "max_transcript_bytes"
    else:
        limit, setting = limits.max_source_bytes, "max_source_bytes"
    _refuse_over(item, limit, setting)


def _refuse_over(item: Incoming, limit: int, setting: str) -> None:
    if len(item.data) > limit:
        raise SourceError(
            f"{item.origin}: {len(item.data):,} bytes is over the {limit:,}-byte limit ({setting})",
            hint=f"split it, or raise {setting} in kb-ai.toml",
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


def read_source(
    candidate: Candidate,
    *,
    max_bytes: int,
    chunk_chars: int,
    data: bytes | None = None,
    max_transcript_bytes: int | None = None,
    convert: ConvertOptions | None = None,
    converter: ConvertProcess | None = None,
) -> Source:
    """Read one file found on disk (or a member of an archive, its bytes in ``data``)."""
    if data is None:
        _, data = file_checksum(
            candidate.path, max_bytes, max_transcript_bytes=max_transcript_bytes
        )
    limits = Limits(
        chunk_chars=chunk_chars,
        max_source_bytes=max_bytes,
        max_transcript_bytes=max_transcript_bytes or max_bytes,
        max_document_bytes=len(data),  # a document's size was checked as it was read
        convert=convert,
    )
    return read_incoming(incoming_file(candidate, data), limits, converter=converter)


def incoming_file(candidate: Candidate, data: bytes) -> Incoming:
    """A file (or an archive's member) as intake reads it."""
    return Incoming(
        candidate.origin,
        redact_name(candidate.member or str(candidate.path)),  # in errors and titles too
        data,
        file_date=None if candidate.member else _file_day(candidate.path),
    )


def source_from_text(
    origin: str,
    title: str,
    text: str,
    *,
    kind: str = "note",
    chunk_chars: int,
    max_bytes: int,
) -> Source:
    """A Source from text handed over directly (a hook, a test): read like any other
    datum, named ``origin``; a transcript in it is recognised and normalised."""
    origin, title = redact_name(origin), redact_name(title.strip())[:120]
    if not origin:
        raise UsageError("a source needs a name")
    item = Incoming(origin, origin, text.encode("utf-8"), title=title, kind=kind)
    limits = Limits(chunk_chars=chunk_chars, max_source_bytes=max_bytes,
                    max_transcript_bytes=max_bytes)  # fmt: skip
    return read_incoming(item, limits)


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
    controls = len(_CONTROLS.findall(text, 0, 8192))
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


def guess_title(text: str, fallback: str) -> str:
    """The first heading of ``text``, else its first line when it reads like a title,
    else ``fallback`` (a file name) made readable; a heading with no letter or digit
    (a rule, an emoji) is no title. "Untitled" only when there is no name at all.
    Redacted before it is cleaned: "ghp_..." loses no "_" to hide in."""
    return _title_of(redact(text[:4000])[0], redact_name(fallback))


def _title_of(text: str, fallback: str) -> str:
    """guess_title of a text and fallback redacted already (a source's text is redacted
    once: redacting costs more than anything else in reading a note)."""
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


def _file_day(path: Path) -> str | None:
    """The day a file was last written (ISO, UTC): the date of a capture that has none."""
    from datetime import UTC, datetime

    try:
        return datetime.fromtimestamp(path.stat().st_mtime, UTC).date().isoformat()
    except (OSError, ValueError, OverflowError):
        return None
