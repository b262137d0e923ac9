"""Extractions: what the extract stage found in one raw source, kept to be read back.

The data is stored as a fenced JSON block under a one-line heading, so it reads back
exactly; the frontmatter says which source version, model and prompt it came from.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kb_ai.errors import KbAiError, UsageError
from wiki._frontmatter import dump_document, load_document
from wiki.files import atomic_write_text
from wiki.slugs import is_slug

if TYPE_CHECKING:
    from wiki.layout import KnowledgeBase

FENCE_OPEN = "```json"
FENCE_CLOSE = "```"


@dataclass
class ExtractionRecord:
    """The extraction of ``source`` ("raw/<slug>.md") at ``source_checksum``."""

    source: str
    source_checksum: str
    model: str
    prompt_version: str
    extracted_at: str
    data: dict[str, Any] = field(default_factory=dict)


def write_extraction(kb: KnowledgeBase, slug: str, rec: ExtractionRecord) -> str:
    """Store ``rec`` atomically as extraction/<slug>.md and return that path."""
    if not is_slug(slug):
        raise UsageError(f"{slug!r} is not a valid slug for an extraction")
    meta = {
        "source": rec.source,
        "source_checksum": rec.source_checksum,
        "model": rec.model,
        "prompt_version": str(rec.prompt_version),
        "extracted_at": rec.extracted_at,
    }
    # indent keeps every JSON line but the outer braces indented, and json escapes
    # newlines in strings, so no line of the data can look like the closing fence.
    data = json.dumps(rec.data, indent=2, ensure_ascii=False)
    body = f"# Extraction of {rec.source}\n\n{FENCE_OPEN}\n{data}\n{FENCE_CLOSE}\n"
    rel = f"extraction/{slug}.md"
    atomic_write_text(kb.resolve(rel, under="extraction"), dump_document(meta, body))
    return rel


def read_extraction(kb: KnowledgeBase, rel: str) -> ExtractionRecord:
    """The extraction at ``rel`` ("extraction/<slug>.md")."""
    path = kb.resolve(rel, under="extraction")
    where = kb.relpath(path)
    meta, body = load_document(path.read_text(encoding="utf-8"), where)
    return ExtractionRecord(
        source=str(meta.get("source") or ""),
        source_checksum=str(meta.get("source_checksum") or ""),
        model=str(meta.get("model") or ""),
        prompt_version=str(meta.get("prompt_version") or ""),
        extracted_at=str(meta.get("extracted_at") or ""),
        data=_read_data(body, where),
    )


def read_extraction_data(kb: KnowledgeBase, slug: str) -> dict[str, Any]:
    """Only the data of the extraction of raw/<slug>.md: its JSON block, without the
    frontmatter (what a check over every source needs, read fast)."""
    if not is_slug(slug):
        raise UsageError(f"{slug!r} is not a valid slug for an extraction")
    rel = f"extraction/{slug}.md"
    return _read_data((kb.extraction_dir / f"{slug}.md").read_text(encoding="utf-8"), rel)


def _read_data(body: str, where: str) -> dict[str, Any]:
    lines = [line.rstrip("\r") for line in body.split("\n")]
    hint = "delete the file; the next compile extracts the source again"
    try:
        start = lines.index(FENCE_OPEN)
        end = max(i for i, line in enumerate(lines) if line == FENCE_CLOSE and i > start)
    except ValueError:
        raise KbAiError(f"{where}: no ```json block with the extraction data", hint=hint) from None
    try:
        data = json.loads("\n".join(lines[start + 1 : end]))
    except json.JSONDecodeError as exc:
        raise KbAiError(
            f"{where}: the extraction data is not valid JSON: {exc}", hint=hint
        ) from exc
    if not isinstance(data, dict):
        raise KbAiError(f"{where}: the extraction data is not a JSON object", hint=hint)
    return data
