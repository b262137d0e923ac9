"""Articles in their source's own words, for small models.

A 0.5B model on a CPU writes thin or wrong articles slowly (issue 18: 14 minutes for the
four example notes, and answers could not be found in what it wrote). With a small model
(a local one, or ``small_model = true``) the compile keeps the pipeline's shape but asks
the model only to name each source: one short extract call per source for its title,
summary, type and topics, under a grammar. Classify and write are mechanical: each
source is one article whose body is the source's text (already redacted), so every
sentence of the wiki is one the team wrote, and the extractive answers quote them.

The reply is untrusted like any other: the type must be one of the wiki's categories,
the title and summary must state nothing the source does not (else the source's own
heading and first sentences are used), topics are cut to a few words.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import date
from pathlib import PurePosixPath
from typing import Any

from compiler.checks import accept_summary, summary_from_body
from compiler.classify import CATEGORY_HELP, Target
from compiler.extract import Extraction, check_extraction
from compiler.material import Material
from compiler.sources import Source
from compiler.state import Work
from compiler.write import clean_body
from kb_ai.grounding import Evidence
from kb_ai.llm import LLM
from kb_ai.prompts import PromptLibrary
from wiki import Article, CatalogEntry, derive_keys, slug_of, slugify, unique_slug

#: The article keeps at most this much of its source; the rest stays in raw/, linked.
BODY_MAX_CHARS = 100_000
#: The model reads at most this much of a source to name it (its beginning).
NAMING_CHARS = 6_000

_H1 = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.M)


def naming_schema(categories: Sequence[str]) -> dict[str, Any]:
    """The small extract stage's reply: a name for the source, nothing else."""
    return {
        "type": "object",
        "properties": {
            "title": {"type": "string", "maxLength": 100},
            "summary": {"type": "string", "maxLength": 240},
            "type": {"type": "string", "enum": list(categories)},
            "topics": {
                "type": "array",
                "items": {"type": "string", "maxLength": 30},
                "maxItems": 5,
            },
        },
        "required": ["title", "summary", "type", "topics"],
        "additionalProperties": False,
    }


async def name_source(
    llm: LLM, prompts: PromptLibrary, source: Source, categories: Sequence[str]
) -> Extraction:
    """One call: the source's title, summary, type and topics, checked against it."""
    text = source.text if len(source.text) <= NAMING_CHARS else _cut(source.text, NAMING_CHARS)
    messages = prompts.render(
        "extract_small",
        title=source.title,
        kind=source.kind,
        text=text,
        categories=list(categories),
        category_help=CATEGORY_HELP,
    )
    reply = await llm.complete(
        messages, stage="extract", schema=naming_schema(categories), schema_name="naming"
    )
    with reply.checked():
        ex = Extraction.from_data(reply.data)
        kind = reply.data.get("type") if isinstance(reply.data, dict) else None
    # Repeats and summary sentences the source does not state go (compiler.fidelity).
    ex = check_extraction(ex, source.text, restore=False)
    ex.type = kind if kind in categories else categories[0]
    ex.topics = [t for t in ex.topics if 0 < len(t) <= 30][:5]
    if not ex.title:
        ex.title = source.title
    return ex


def source_targets(
    work: Sequence[Work], existing: Mapping[str, CatalogEntry], categories: Sequence[str]
) -> dict[int, tuple[Target]]:
    """Where each source goes (by its index in ``work``), in input order: the article it
    fed before, else a new one of its own (under a slug no article of the wiki or of
    this run has)."""
    taken = {slug_of(p) for p in existing}
    placed: dict[int, tuple[Target]] = {}
    for i, w in enumerate(work):
        if not w.usable:
            continue
        assert w.extraction is not None
        entry = next((existing[p] for p in w.previous_articles if p in existing), None)
        if entry is not None:
            placed[i] = (Target(entry.path, entry.title, entry.type, exists=True),)
            continue
        title = article_title(w.extraction, w.source)
        slug = unique_slug(slugify(title), taken)
        taken.add(slug)
        # (a stored naming from before the categories changed may hold another type)
        kind = w.extraction.type if w.extraction.type in categories else categories[0]
        placed[i] = (Target(f"wiki/{kind}/{slug}.md", title, kind, exists=False),)
    return placed


def own_source(
    work: Mapping[str, Work], material: Sequence[Material], existing: Article | None
) -> Work | None:
    """The one source an article is kept verbatim from, or None: an article fed by more
    than one source (compiled earlier by a larger model) is still merged by the model."""
    if len(material) != 1:
        return None
    w = work.get(material[0].source)
    if w is None or w.extraction is None:
        return None
    if existing is not None and set(existing.sources) - {w.raw_path}:
        return None
    return w


def article_title(extraction: Extraction, source: Source) -> str:
    """The note's own first heading; else the model's title if the source states all of
    it; else the title kb-ai gave the source when it read it."""
    m = _H1.search(source.text[:NAMING_CHARS])
    if m and m.group(1).strip():
        return m.group(1).strip()[:120]
    proposed = " ".join(extraction.title.split())
    if proposed and not Evidence(source.title, source.text).unsupported(proposed):
        return proposed[:120]
    return source.title


def source_article(
    w: Work,
    target: Target,
    existing: Article | None,
    notes: list[str] | None = None,
    *,
    today: date | None = None,
) -> Article:
    """The article of one source, its body the source's own text."""
    source, raw_path, extraction = w.source, w.raw_path, w.extraction or Extraction()
    day = (today or date.today()).isoformat()
    title = existing.title if existing else target.title
    body = clean_body(source.text, title)
    if len(body) > BODY_MAX_CHARS:
        body = _cut(body, BODY_MAX_CHARS)
        link = "../" * (len(PurePosixPath(target.path).parts) - 1) + raw_path
        body += f"\n\n(The source goes on: [{PurePosixPath(raw_path).name}]({link}).)"
        if notes is not None:
            notes.append(f"kept the first {len(body):,} characters of {raw_path}")
    summary, problem = accept_summary(
        extraction.summary, body, Evidence(title, source.title, source.text)
    )
    if summary is None:
        summary = summary_from_body(body) or title
        if notes is not None:
            notes.append(f"summary taken from the source: {problem}")
    return Article(
        path=existing.path if existing else target.path,
        title=title,
        type=existing.type if existing else target.type,
        summary=summary,
        tags=[re.sub(r"\s+", "-", t.strip().lower()) for t in extraction.topics],
        sources=[raw_path],
        created=existing.created if existing else day,
        updated=day,
        body=body.rstrip() + "\n",
        keys=derive_keys(body),
    )


def _cut(text: str, limit: int) -> str:
    """``text`` up to ``limit`` characters, ended at a paragraph (else a line) break."""
    head = text[:limit]
    for sep in ("\n\n", "\n"):
        at = head.rfind(sep)
        if at > limit // 2:
            return head[:at].rstrip()
    return head.rstrip()
