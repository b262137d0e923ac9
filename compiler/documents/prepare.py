"""A document made ready to be a compile source: converted, redacted (no secret reaches
raw/ or the model), and split by its own structure for extraction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from compiler.documents.convert import ConvertOptions, convert_document
from compiler.documents.markers import MARKER
from compiler.documents.sections import split_sections
from compiler.redact import redact

if TYPE_CHECKING:
    from compiler.documents.isolation import ConvertProcess


@dataclass(frozen=True)
class Prepared:
    text: str  # converted and redacted, with its markers
    title: str  # the document's own title, redacted ("" when it names none)
    chunks: list[str]  # one per section, for extraction
    redactions: int

    def title_text(self) -> str:
        """The text without markers, for guessing a title from its first line."""
        return MARKER.sub("", self.text).strip()


def prepare_document(
    name: str,
    data: bytes,
    *,
    chunk_chars: int,
    options: ConvertOptions | None = None,
    converter: ConvertProcess | None = None,
) -> Prepared:
    """Raises DocumentError naming the cause when the document cannot be read.
    ``converter``: converts it in a process of its own, under a time limit."""
    if converter is not None:
        doc = converter.convert(data, name, options)
    else:
        doc = convert_document(data, name, options)
    text, redacted = redact(doc.text)
    return Prepared(
        text=text,
        title=redact(doc.title)[0] if doc.title else "",
        chunks=split_sections(text, chunk_chars),
        redactions=redacted,
    )
