"""Extract: one model call per chunk, turning a source into structured notes."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from compiler.documents.markers import span
from compiler.documents.sections import outline
from compiler.fidelity import check_extraction
from compiler.schemas import EXTRACTION_SCHEMA, TRANSCRIPT_EXTRACTION_SCHEMA
from compiler.sources import Source
from kb_ai.errors import LLMOutputError
from kb_ai.llm import LLM
from kb_ai.prompts import PromptLibrary

LIST_FIELDS = (
    "topics",
    "concepts",
    "entities",
    "decisions",
    "facts",
    "enumerations",
    "action_items",
    "corrections",
    "pitfalls",
    "conventions",
)
PITFALL_KEYS = ("error", "cause", "fix", "command_or_file")


@dataclass
class Extraction:
    title: str = ""
    summary: str = ""
    topics: list[str] = field(default_factory=list)
    concepts: list[dict[str, str]] = field(default_factory=list)
    entities: list[dict[str, str]] = field(default_factory=list)
    decisions: list[dict[str, str]] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)
    enumerations: list[dict[str, Any]] = field(default_factory=list)
    action_items: list[dict[str, str]] = field(default_factory=list)
    # from transcripts only (empty for notes): what a working session teaches
    corrections: list[dict[str, str]] = field(default_factory=list)
    pitfalls: list[dict[str, str]] = field(default_factory=list)
    conventions: list[str] = field(default_factory=list)
    # what kb-ai's checks against the source changed (compiler.fidelity); not material
    notes: list[str] = field(default_factory=list)
    # what each fact is about and when it held, as the source dates it: (about, held)
    # by the fact's key (its text, case-folded, spaces as one); checked against the
    # source before it is stored (compiler.fidelity)
    fact_context: dict[str, tuple[str, str]] = field(default_factory=dict)
    # the article type a small model chose when it only named the source
    # (compiler/source_article.py); empty otherwise
    type: str = ""

    @classmethod
    def from_data(cls, data: Any) -> Extraction:
        """Validate a reply (or a stored record) into an Extraction, dropping malformed items."""
        if not isinstance(data, dict):
            raise LLMOutputError("extraction is not a JSON object")
        ex = cls(title=_s(data.get("title")), summary=_s(data.get("summary")))
        ex.topics = _strings(data.get("topics"))
        ex.facts, ex.fact_context = _facts(data.get("facts"))
        ex.concepts = _records(data.get("concepts"), ("name", "description"))
        ex.entities = _records(data.get("entities"), ("name", "kind", "description"))
        ex.decisions = _records(data.get("decisions"), ("what", "why", "who"))
        ex.action_items = _records(data.get("action_items"), ("what", "who"))
        ex.corrections = _records(data.get("corrections"), ("rule", "why"))
        ex.pitfalls = _records(data.get("pitfalls"), PITFALL_KEYS)
        ex.conventions = _strings(data.get("conventions"))
        ex.notes = _strings(data.get("notes"))
        ex.type = _s(data.get("type"))
        ex.enumerations = [
            {"name": _s(e.get("name")), "items": _strings(e.get("items"))}
            for e in data.get("enumerations") or []
            if isinstance(e, dict) and _strings(e.get("items"))
        ]
        return ex

    def is_empty(self) -> bool:
        return not self.summary and not any(getattr(self, f) for f in LIST_FIELDS)

    def as_data(self) -> dict[str, Any]:
        """The fields as plain data, in field order (dataclasses.asdict deep-copies every
        item: seconds on the event loop for a source of a few MB)."""
        data: dict[str, Any] = {"title": self.title, "summary": self.summary}
        for name in LIST_FIELDS:
            data[name] = [_plain(item) for item in getattr(self, name)]
        data["facts"] = [self._fact_data(f) for f in self.facts]
        data["notes"] = list(self.notes)  # what the checks against the source changed
        if self.type:
            data["type"] = self.type
        return data

    def _fact_data(self, fact: str) -> str | dict[str, str]:
        """A fact as stored: its text, with what it is about and when it held if known."""
        context = self.fact_context.get(_key(fact))
        if context is None:
            return fact
        about, held = context
        return {"fact": fact, "about": about, "held": held}

    def _fact_lines(self) -> list[str]:
        """The facts for the writer: those about the same thing together, under what
        they are about, each with when it held where the source dates it."""
        groups: dict[str, list[str]] = {}
        for fact in self.facts:
            about, held = self.fact_context.get(_key(fact), ("", ""))
            groups.setdefault(about, []).append(f"- {fact}" + (f" (held {held})" if held else ""))
        out = []
        for about, lines in groups.items():
            out.append(f"Facts about {about}:" if about else "Facts:")
            out += lines
        return out

    def names(self) -> list[str]:
        """The subjects this extraction covers, for ranking and classification."""
        names = [c["name"] for c in self.concepts] + [e["name"] for e in self.entities]
        names += [d["what"][:80] for d in self.decisions]
        names += [p["error"][:80] for p in self.pitfalls]
        names += [c["rule"][:80] for c in self.corrections]
        return [n for n in dict.fromkeys(names) if n][:20]

    def to_markdown(self) -> str:
        """The material as compact Markdown, for the writer."""
        out: list[str] = []
        if self.summary:
            out.append(f"Summary: {self.summary}")
        if self.decisions:
            out.append("Decisions:")
            for d in self.decisions:
                line = f"- {d['what']}"
                if d.get("why"):
                    line += f" Why: {d['why']}"
                if d.get("who"):
                    line += f" (by {d['who']})"
                out.append(line)
        if self.corrections:
            out.append("Corrections and constraints the user stated:")
            out += [
                f"- {c['rule']}" + (f" Why: {c['why']}" if c.get("why") else "")
                for c in self.corrections
            ]
        if self.pitfalls:
            out.append("Pitfalls (error, cause, fix):")
            for p in self.pitfalls:
                line = f"- {p['error']}"
                if p.get("cause"):
                    line += f" Cause: {p['cause']}"
                if p.get("fix"):
                    line += f" Fix: {p['fix']}"
                if p.get("command_or_file"):
                    line += f" (`{p['command_or_file']}`)"
                out.append(line)
        if self.conventions:
            out.append("Conventions:")
            out += [f"- {c}" for c in self.conventions]
        if self.concepts:
            out.append("Concepts:")
            out += [f"- {c['name']}: {c['description']}" for c in self.concepts]
        if self.entities:
            out.append("Entities:")
            out += [
                f"- {e['name']}"
                + (f" ({e['kind']})" if e.get("kind") else "")
                + (f": {e['description']}" if e.get("description") else "")
                for e in self.entities
            ]
        out += self._fact_lines()
        for e in self.enumerations:
            out.append(f"Complete list, {e['name'] or 'items'} (keep every item, in order):")
            out += [f"  {i}. {item}" for i, item in enumerate(e["items"], 1)]
        if self.action_items:
            out.append("Action items:")
            out += [
                f"- {a['what']}" + (f" (owner: {a['who']})" if a.get("who") else "")
                for a in self.action_items
            ]
        return "\n".join(out)


def _s(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _strings(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    return _unique(s for v in value if (s := _s(v)))


_HELD = re.compile(r"^\d{4}(?:-(?:0[1-9]|1[0-2])(?:-(?:0[1-9]|[12]\d|3[01]))?)?$")


def _facts(value: Any) -> tuple[list[str], dict[str, tuple[str, str]]]:
    """Facts from a reply or a stored extraction: each a string (as stored before facts
    were dated, or from a model that ignored the schema) or {fact, about, held}. What
    it is about is one short line; when it held, an ISO date or month, or nothing."""
    if not isinstance(value, list):
        return [], {}
    facts: list[str] = []
    context: dict[str, tuple[str, str]] = {}
    for item in value:
        record = item if isinstance(item, dict) else {"fact": item}
        fact = _s(record.get("fact")) or _s(record.get("text"))
        if not fact:
            continue
        facts.append(fact)
        about = " ".join(_s(record.get("about")).split())[:80]
        held = _s(record.get("held"))
        held = held if _HELD.match(held) else ""
        if about or held:
            context.setdefault(_key(fact), (about, held))
    return _unique(facts), context


def _records(value: Any, keys: tuple[str, ...]) -> list[dict[str, str]]:
    if not isinstance(value, list):
        return []
    records = (
        {k: _s(item.get(k)) for k in keys}
        for item in value
        if isinstance(item, dict) and _s(item.get(keys[0]))
    )
    return _unique(records)


#: Chunk extractions holding more items than this are merged in a thread, off the loop.
MERGE_INLINE_ITEMS = 2_000


def merge_extractions(parts: list[Extraction]) -> Extraction:
    """The extractions of a source's chunks as one, in chunk order: each item once (the
    first of those equal but for case and spacing), summaries joined up to 800 chars.

    Linear in the number of items: a 5 MB source has hundreds of chunks and tens of
    thousands of items, where comparing each with every one kept took minutes of CPU.
    """
    out = Extraction(
        title=next((p.title for p in parts if p.title), ""),
        summary=" ".join(p.summary for p in parts if p.summary)[:800],
    )
    for name in LIST_FIELDS:
        setattr(out, name, _unique(item for p in parts for item in getattr(p, name)))
    for p in parts:
        for key, context in p.fact_context.items():
            out.fact_context.setdefault(key, context)
    return out


def item_count(parts: list[Extraction]) -> int:
    return sum(len(getattr(p, name)) for p in parts for name in LIST_FIELDS)


def _unique(items: Iterable[Any]) -> list[Any]:
    """``items`` in order without repeats, comparing by :func:`_key` (a dict lookup each)."""
    seen: dict[Any, Any] = {}
    for item in items:
        seen.setdefault(_key(item), item)
    return list(seen.values())


def _plain(item: Any) -> Any:
    """A copy of an item: a string as it is, a record with its lists copied."""
    if isinstance(item, dict):
        return {k: list(v) if isinstance(v, list) else v for k, v in item.items()}
    return item


def _key(item: Any) -> Any:
    """What makes two items the same: their text, case-folded, runs of space as one."""
    if isinstance(item, str):
        return " ".join(item.casefold().split())
    if isinstance(item, dict):
        return tuple((k, _key(v)) for k, v in item.items())
    if isinstance(item, list):
        return tuple(_key(v) for v in item)
    return item


def locate(ex: Extraction, where: str) -> Extraction:
    """Each fact of a document's piece tagged with where it came from
    ("p. 12", "slides 3-4"), from the piece's markers, not from the model: the writer
    keeps them, and an answer can name the page."""
    if where:
        tag = f" ({where})"
        tagged = [f if f.endswith(tag) else f + tag for f in ex.facts]
        ex.fact_context = {
            _key(new): ex.fact_context[_key(old)]
            for old, new in zip(ex.facts, tagged, strict=True)
            if _key(old) in ex.fact_context
        }
        ex.facts = tagged
    return ex


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
    return check_extraction(result, source.text, chunks=count, restore=source.kind != "transcript")
