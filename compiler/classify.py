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
from wiki import CatalogEntry, format_entry, normalise_article_path, slug_of, slugify
from wiki.words import STOP_WORDS, words

DEFAULT_CATEGORIES = ("concept", "decision", "howto", "reference", "pitfall", "convention")
CATEGORY_HELP = {
    "concept": "what something is and how it works (a system, a component, an idea)",
    "decision": "a choice that was made, its reasons and alternatives",
    "howto": "steps to get something done",
    "reference": "facts to look up: lists, settings, tables, contacts, inventories",
    "pitfall": "a problem that bit someone, its cause and the fix",
    "convention": "a rule or habit the team follows",
}


def terms(text: str) -> list[str]:
    return [w for w in words(text.lower()) if w not in STOP_WORDS and len(w) > 1]


# The term counts of the catalog the last ranker was made of, by the text they count: a
# long-lived process (kb-ai serve's worker) ranks nearly the same catalog run after run
# (10,000 entries: the ranker in ~130 ms counting, ~30 ms looking the counts up). Never
# changed once made.
_BAGS: dict[str, Counter[str]] = {}


class CatalogRanker:
    """Ranks catalog entries against new material by weighted word overlap (tf-idf-like).

    Built once per run over the catalog as it was at the start."""

    def __init__(self, entries: Sequence[CatalogEntry]) -> None:
        self.entries = list(entries)
        self.by_path = {e.path: e for e in self.entries}
        self._lines: dict[int, str] = {}  # formatted when first ranked: most never are
        self._by_slug: dict[str, CatalogEntry] | None = None
        global _BAGS
        texts = [
            " ".join([e.title, e.title, e.summary, " ".join(e.keys), " ".join(e.tags)])
            for e in self.entries
        ]
        known, _BAGS = _BAGS, {}
        self.bags = []
        for text in texts:
            bag = known.get(text)
            if bag is None:
                bag = Counter(terms(text))
            self.bags.append(bag)
            _BAGS[text] = bag
        self.index: dict[str, list[int]] = {}  # term -> the entries that have it
        for i, bag in enumerate(self.bags):
            for t in bag:
                if (postings := self.index.get(t)) is None:
                    self.index[t] = [i]
                else:
                    postings.append(i)
        n = max(len(self.entries), 1)
        self.idf = {t: math.log(1 + n / len(postings)) for t, postings in self.index.items()}

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

    def with_slug(self, slug: str) -> CatalogEntry | None:
        """The first entry whose path has this slug (in any type's folder)."""
        if self._by_slug is None:  # (made when first asked: a run proposes few new titles)
            self._by_slug = {}
            for path, entry in self.by_path.items():
                self._by_slug.setdefault(slug_of(path), entry)
        return self._by_slug.get(slug)

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
    max_new: int = 2,
) -> list[Target]:
    """Ask where the material goes; validate every path and type the model proposes.

    Then the checks of issue 13: a new article whose title or keys match an existing one
    updates that one; an "update" without a usable path goes to the best match or
    becomes a new article; generic subjects ("TTL") are dropped when the source has a
    better home; at most ``max_new`` new articles per source; a decision gets the
    decision type.
    """
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
    messages = prompts.render(
        "classify",
        categories=list(categories),
        category_help=CATEGORY_HELP,
        catalog=[format_entry(e) for e in shown],
        source_title=source_title,
        summary=extraction.summary,
        topics=extraction.topics,
        names=extraction.names(),
        max_new=max_new,
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
            target = _target(item, ranker, shown, categories, extraction.title or source_title)
            targets.setdefault(target.path, target)
        if not targets:
            raise LLMOutputError("classification named no usable article")
    return settle_targets(
        list(targets.values()),
        extraction,
        categories,
        max_new=max_new,
        fallback_title=extraction.title or source_title,
    )


def _target(
    item: dict,
    ranker: CatalogRanker,
    shown: Sequence[CatalogEntry],
    categories: Sequence[str],
    fallback_title: str,
) -> Target:
    known = ranker.by_path
    action = item.get("action")
    raw_path = item.get("path") if isinstance(item.get("path"), str) else ""
    title = item.get("title") if isinstance(item.get("title"), str) else ""
    title = title.strip()
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
        # A new article's path comes from its title; what a model wrote there (small
        # models put the title itself) is not used, as long as it tried to go nowhere.
    if action == "update":
        # An update that names no article of this wiki: the article it most likely
        # meant (by its title, else the best-ranked one shown), or a new subject.
        entry = matching_entry(title, ranker) if title else (shown[0] if shown else None)
        if entry is not None:
            return Target(entry.path, entry.title, entry.type, exists=True)
    title = title or fallback_title
    kind = item.get("type") if item.get("type") in categories else categories[0]
    slug = slugify(title)
    same = ranker.with_slug(slug) or matching_entry(title, ranker)
    if same is not None:  # one subject, one article, whatever type the model picked this time
        return Target(same.path, same.title, same.type, exists=True)
    return Target(f"wiki/{kind}/{slug}.md", title, kind, exists=False)


def matching_entry(title: str, ranker: CatalogRanker) -> CatalogEntry | None:
    """The existing article a proposed title names: one of its keys, or a title whose
    words contain the proposal's or are contained in it ("Redis" and "Redis session
    cache"); the closest such title wins."""
    wanted = _title_words(title)
    if not wanted:
        return None
    low = " ".join(title.lower().split())
    candidates: set[int] = set()
    for t in wanted:
        candidates.update(ranker.index.get(t, ()))
    best: tuple[float, str] | None = None
    found = None
    for i in candidates:
        entry = ranker.entries[i]
        have = _title_words(entry.title)
        keyed = any(" ".join(k.lower().split()) == low for k in entry.keys)
        if not (keyed or (have and (wanted <= have or have <= wanted))):
            continue
        score = 1.0 if keyed else len(wanted & have) / len(wanted | have)
        rank = (-score, entry.path)
        if best is None or rank < best:
            best, found = rank, entry
    return found


def _title_words(title: str) -> set[str]:
    """The words of a title that tell subjects apart (digits too: "Topic 1" is not "Topic 2")."""
    return {w for w in words(title.lower()) if w not in STOP_WORDS}


_DECISION_WORDS = re.compile(
    r"\b(?:decid\w*|decision\w*|chose|chosen|choose|agreed|adopt\w*|we will)\b", re.I
)


def is_generic(title: str) -> bool:
    """A title too general to be a subject of its own ("TTL", "Web Application")."""
    words = terms(title)
    return len(words) <= 2 and not any(ch.isdigit() for ch in title)


def settle_targets(
    targets: list[Target],
    extraction: Extraction,
    categories: Sequence[str],
    *,
    max_new: int,
    fallback_title: str,
) -> list[Target]:
    """The targets after the checks: generic new subjects only without a better home, at
    most ``max_new`` new articles, and the decision type for a decision."""
    specific = [t for t in targets if t.exists or not is_generic(t.title)]
    if specific:
        kept = specific
    else:  # only generic subjects: one article, under the source's own title if specific
        first = targets[0]
        if fallback_title and not is_generic(fallback_title):
            slug = slugify(fallback_title)
            first = Target(f"wiki/{first.type}/{slug}.md", fallback_title, first.type, False)
        kept = [first]
    new = [t for t in kept if not t.exists][: max(max_new, 1)]
    kept = [t for t in kept if t.exists or t in new]
    decided = extraction.decisions and _DECISION_WORDS.search(
        f"{extraction.title} {extraction.summary}"
    )
    if decided and "decision" in categories and not any(t.type == "decision" for t in kept):
        for i, t in enumerate(kept):
            if not t.exists:
                slug = PurePosixPath(t.path).stem
                kept[i] = Target(f"wiki/decision/{slug}.md", t.title, "decision", False)
                break
    return kept
