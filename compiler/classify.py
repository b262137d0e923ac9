"""Classify: decide which articles a source's material goes into.

One model call per source, against a ranked, budgeted slice of the catalog (never the
whole catalog: it does not fit once a wiki grows). The slice depends only on the
catalog as it was when the run started and on the source itself, so results do not
depend on which call finishes first.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from compiler.extract import Extraction
from compiler.schemas import classification_schema
from kb_ai.errors import LLMOutputError
from kb_ai.llm import LLM
from kb_ai.prompts import PromptLibrary
from wiki import CatalogEntry, format_entry, normalise_article_path, slugify

DEFAULT_CATEGORIES = ("concept", "decision", "howto", "reference", "pitfall", "convention")
CATEGORY_HELP = {
    "concept": "what something is and how it works (a system, a component, an idea)",
    "decision": "a choice that was made, its reasons and alternatives",
    "howto": "steps to get something done",
    "reference": "facts to look up: lists, settings, tables, contacts, inventories",
    "pitfall": "a problem that bit someone, its cause and the fix",
    "convention": "a rule or habit the team follows",
}

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "will",
        "with",
        "we",
        "our",
        "you",
        "not",
        "no",
    ]
)


def terms(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1]


class CatalogRanker:
    """Ranks catalog entries against new material by weighted word overlap (tf-idf-like).

    Built once per run over the catalog as it was at the start."""

    def __init__(self, entries: Sequence[CatalogEntry]) -> None:
        self.entries = list(entries)
        self.by_path = {e.path: e for e in self.entries}
        self._lines: dict[int, str] = {}  # formatted when first ranked: most never are
        self.bags = [
            Counter(
                terms(" ".join([e.title, e.title, e.summary, " ".join(e.keys), " ".join(e.tags)]))
            )
            for e in self.entries
        ]
        df: Counter[str] = Counter()
        for bag in self.bags:
            df.update(bag.keys())
        n = max(len(self.entries), 1)
        self.idf = {t: math.log(1 + n / c) for t, c in df.items()}
        self.index: dict[str, list[int]] = {}
        for i, bag in enumerate(self.bags):
            for t in bag:
                self.index.setdefault(t, []).append(i)

    def slice(self, query_terms: list[str], budget_chars: int) -> list[CatalogEntry]:
        """The best-matching entries whose lines fit in budget_chars, best first."""
        scores: Counter[int] = Counter()
        for t in set(query_terms):
            weight = self.idf.get(t, 0.0)
            for i in self.index.get(t, ()):
                scores[i] += weight * (1 + math.log(self.bags[i][t]))
        picked, used = [], 0
        for i, _ in sorted(scores.items(), key=lambda kv: (-kv[1], self.entries[kv[0]].path)):
            cost = len(self._line(i)) + 1
            if used + cost > budget_chars:
                continue
            picked.append(self.entries[i])
            used += cost
        return picked

    def _line(self, i: int) -> str:
        line = self._lines.get(i)
        if line is None:
            entry = self.entries[i]
            line = self._lines[i] = entry.line or format_entry(entry)
        return line


@dataclass(frozen=True)
class Target:
    """One article a source's material goes into."""

    path: str  # wiki/<type>/<slug>.md
    title: str
    type: str
    exists: bool


async def classify_source(
    llm: LLM,
    prompts: PromptLibrary,
    *,
    source_title: str,
    extraction: Extraction,
    ranker: CatalogRanker,
    categories: Sequence[str],
    budget_chars: int,
) -> list[Target]:
    """Ask where the material goes; validate every path and type the model proposes."""
    query = terms(
        " ".join(
            [
                extraction.title,
                source_title,
                extraction.summary,
                *extraction.topics,
                *extraction.names(),
            ]
        )
    )
    shown = ranker.slice(query, budget_chars)
    known = ranker.by_path
    messages = prompts.render(
        "classify",
        categories=list(categories),
        category_help=CATEGORY_HELP,
        catalog=[format_entry(e) for e in shown],
        source_title=source_title,
        summary=extraction.summary,
        topics=extraction.topics,
        names=extraction.names(),
    )
    schema = classification_schema(list(categories), [e.path for e in shown])
    reply = await llm.complete(
        messages, stage="classify", schema=schema, schema_name="classification"
    )
    with reply.checked():  # cached only if every path and type passed
        items = reply.data.get("articles") if isinstance(reply.data, dict) else None
        if not isinstance(items, list) or not items:
            raise LLMOutputError("classification named no article")
        targets: dict[str, Target] = {}
        for item in items[:4]:
            if not isinstance(item, dict):
                continue
            target = _target(item, known, categories, extraction.title or source_title)
            targets.setdefault(target.path, target)
        if not targets:
            raise LLMOutputError("classification named no usable article")
    return list(targets.values())


def _target(
    item: dict, known: dict[str, CatalogEntry], categories: Sequence[str], fallback_title: str
) -> Target:
    action = item.get("action")
    raw_path = item.get("path") if isinstance(item.get("path"), str) else ""
    if raw_path.strip():
        path = normalise_article_path(raw_path)
        if path in known:
            entry = known[path]
            return Target(path, entry.title, entry.type, exists=True)
        parts = PurePosixPath(path).parts
        stripped = raw_path.strip()
        absolute = stripped.startswith(("/", "\\")) and not stripped.startswith("/wiki/")
        if absolute or ".." in parts or (action == "update" and parts[:1] != ("wiki",)):
            raise LLMOutputError(f"the model proposed a path outside wiki/: {raw_path!r}")
        if action == "update":
            raise LLMOutputError(
                f"the model proposed a path that is not an article of this wiki: {raw_path!r}"
            )
        # A new article's path comes from its title; what a model wrote there (small
        # models put the title itself) is not used, as long as it tried to go nowhere.
    # An "update" that names no article is a new subject, as far as anyone can tell.
    title = item.get("title") if isinstance(item.get("title"), str) else ""
    title = title.strip() or fallback_title
    kind = item.get("type") if item.get("type") in categories else categories[0]
    slug = slugify(title)
    same = next((e for p, e in known.items() if PurePosixPath(p).stem == slug), None)
    if same is not None:  # one subject, one article, whatever type the model picked this time
        return Target(same.path, same.title, same.type, exists=True)
    return Target(f"wiki/{kind}/{slug}.md", title, kind, exists=False)
