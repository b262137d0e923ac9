"""A document as a compile source: converted, redacted, split by its structure, with its
original bytes kept for raw/ (beside the converted text)."""

from __future__ import annotations

import hashlib
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from compiler.documents.convert import ConvertOptions, convert_document
from compiler.documents.markers import MARKER
from compiler.documents.sections import split_sections

if TYPE_CHECKING:
    from compiler.sources import Source


def document_source(
    origin: str,
    name: str,
    data: bytes,
    *,
    chunk_chars: int,
    options: ConvertOptions | None = None,
    checksum: str | None = None,
) -> Source:
    """The Source of the document ``name`` (raises DocumentError naming the cause)."""
    from compiler.redact import redact
    from compiler.sources import Source, guess_title

    doc = convert_document(data, name, options)
    text, redacted = redact(doc.text)
    stem = PurePosixPath(name).stem
    title = doc.title or guess_title(MARKER.sub("", text).strip(), stem)
    return Source(
        origin=origin,
        title=redact(title)[0],
        kind="document",
        text=text,
        checksum=checksum or hashlib.sha256(data).hexdigest(),
        size=len(data),
        chunks=split_sections(text, chunk_chars),
        redactions=redacted,
        original=data,
        original_suffix=PurePosixPath(name).suffix.lower(),
    )
