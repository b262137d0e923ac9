"""Extract: one model call per chunk, turning a source into structured notes."""

from __future__ import annotations

import asyncio
from typing import Any

from compiler.check_process import checked_extraction, extraction_fields, run_check
from compiler.documents.markers import span
from compiler.documents.sections import outline
from compiler.extraction import (
    LIST_FIELDS,
    MERGE_INLINE_ITEMS,
    PITFALL_KEYS,
    Extraction,
    item_count,
    locate,
    merge_extractions,
)
from compiler.fidelity import check_extraction
from compiler.schemas import EXTRACTION_SCHEMA, TRANSCRIPT_EXTRACTION_SCHEMA
from compiler.sources import Source
from kb_ai.errors import LLMOutputError
from kb_ai.llm import LLM
from kb_ai.prompts import PromptLibrary

__all__ = [  # the extraction record lives in compiler/extraction.py; named here too
    "LIST_FIELDS",
    "MERGE_INLINE_ITEMS",
    "PITFALL_KEYS",
    "Extraction",
    "check_extraction",
    "extract_prompt",
    "extract_source",
    "item_count",
    "locate",
    "merge_extractions",
]


def extract_prompt(kind: str) -> tuple[str, dict[str, Any]]:
    """The prompt and reply schema of the extract stage for a kind of source."""
    if kind == "transcript":
        return "extract_transcript", TRANSCRIPT_EXTRACTION_SCHEMA
    return "extract", EXTRACTION_SCHEMA


async def extract_source(llm: LLM, prompts: PromptLibrary, source: Source) -> Extraction:
    """Extract every chunk of a source (concurrently; merged in chunk order)."""
    count = len(source.chunks)
    prompt, schema = extract_prompt(source.kind)
    replies = []  # each cached once it passed its checks; all dropped if nothing was found

    async def one(index: int, chunk: str) -> Extraction:
        messages = prompts.render(
            prompt,
            title=source.title,
            kind=source.kind,
            chunk_index=index + 1,
            chunk_count=count,
            text=chunk,
        )
        reply = await llm.complete(
            messages, stage="extract", schema=schema, schema_name="extraction"
        )
        replies.append(reply)
        with reply.checked():
            return locate(Extraction.from_data(reply.data), span(chunk))

    parts = await asyncio.gather(*(one(i, c) for i, c in enumerate(source.chunks)))
    if item_count(parts) > MERGE_INLINE_ITEMS:  # a large source: other calls go on meanwhile
        result = await asyncio.to_thread(merge_extractions, parts)
    else:
        result = merge_extractions(parts)
    if result.is_empty():
        for reply in replies:
            reply.reject()
        raise LLMOutputError("the model extracted nothing from this source")
    if not result.title:
        result.title = source.title
    if source.kind == "document":  # a long document's article keeps its outline
        items = outline(source.text)
        if items:
            result.enumerations.insert(0, {"name": f"Outline of {source.title}", "items": items})
    # checked beside the event loop when the run has a process for it (check_process.py)
    checked = await run_check(source.origin, checked_extraction, extraction_fields(result),
                              source.text, count, source.kind != "transcript")  # fmt: skip
    return Extraction(**checked)
