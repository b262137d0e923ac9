"""Coverage decided on evidence: do the pages read hold sentences that answer the question?

A page that shares one word with a question does not answer it: "Who is the on-call
engineer for the payments service?" is not answered by a page that says "engineer" once
and "service" in another sentence. So before any answer is written (by a model that
writes, or by one that picks sentences), the question's content terms
(retrieval/terms.py content_terms: meaningful terms less the GENERIC words a question
uses for any subject) are looked for in the sentences of the pages read. Each weighs by
its rarity among those sentences (one most sentences hold is the pages' own subject and
says little; one none holds weighs as one a single sentence holds: it may be said
otherwise), and a word that is not a name weighs WORD_WEIGHT of a name's weight.

The score is the share of the question's weight that the best ``SPAN`` sentences hold
together (the best sentence, then the one that adds most: a multi-hop question's two
facts sit in two sentences). Below ``THRESHOLD`` the question is not covered: the answer
says so and names the closest pages read as "see also", claiming nothing from them.
The threshold was tuned on the development halves of bench/ask/coverage.py only
(docs/benchmarks.md gives the held-out figures).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from kb_ai.llm import Usage
from retrieval.answer import Answer
from retrieval.checks import NOT_COVERED, Finding
from retrieval.extractive import sentences_of
from retrieval.follow import Hop
from retrieval.pages import Citation, Page
from retrieval.terms import content_terms, held, terms
from wiki.words import CJK_RUN

THRESHOLD = 0.6
SPAN = 2
# A word that is not a name ("born", "author") weighs this much of a name's weight: the
# page that answers often says it otherwise ("writer from Boston"), a name it must hold.
WORD_WEIGHT = 0.3
# A name: a capitalised word, a code span or a number, anywhere but at the start.
_NAME = re.compile(r"`[^`]+`|\b[A-Z0-9][\w'’.-]*")
SEE_ALSO = 3


@dataclass(frozen=True)
class Coverage:
    score: float  # share of the question's weight the best sentences hold, 0..1
    wanted: frozenset[str]  # the question's content terms
    missing: frozenset[str]  # those no sentence of the pages read holds
    ranked: list[str]  # page paths, the page holding most of the question first

    def covered(self, threshold: float = THRESHOLD) -> bool:
        return not self.wanted or self.score >= threshold


def measure(question: str, pages: Sequence[Page], span: int = SPAN) -> Coverage:
    """How much of ``question`` the sentences of ``pages`` answer (see the module)."""
    wanted = frozenset(content_terms(question))
    found: list[tuple[set[str], str]] = []
    n = 1
    for page in pages:
        for text in sentences_of(f"{page.title}.\n{page.text}"):
            n += 1
            hit = held(wanted, terms(text))
            if hit:
                found.append((hit, page.path))
    have = {t for hit, _ in found for t in hit}
    # A Chinese or Japanese question cuts into bigrams across its word boundaries
    # (成渝高铁: 渝高), which no page holds: only those some page read holds count.
    wanted = frozenset(t for t in wanted if t in have or not CJK_RUN.match(t))
    if not wanted:
        return Coverage(1.0, wanted, frozenset(), [p.path for p in pages])
    # rarity among all the sentences read; a term none holds weighs as one only one
    # holds (it may be said otherwise), so a lone missing word does not sink a question
    df = Counter(t for hit, _ in found for t in hit)
    names = content_terms(" ".join(m.group() for m in _NAME.finditer(question) if m.start()))
    weight = {t: math.log(n / max(df[t], 1)) * (1.0 if t in names else WORD_WEIGHT) for t in wanted}
    total = sum(weight.values()) or 1.0
    got: set[str] = set()
    for _ in range(span):
        best = max(found, key=lambda h: sum(weight[t] for t in h[0] - got), default=None)
        if best is None or not best[0] - got:
            break
        got |= best[0]
    by_page: dict[str, float] = {}
    for hit, path in found:
        by_page[path] = max(by_page.get(path, 0.0), sum(weight[t] for t in hit))
    ranked = sorted((p.path for p in pages), key=lambda p: -by_page.get(p, 0.0))
    score = sum(weight[t] for t in got) / total
    return Coverage(score, wanted, wanted - have, ranked)


def see_also(coverage: Coverage, pages: Sequence[Page]) -> list[Citation]:
    """At most SEE_ALSO pages read, closest to the question first."""
    by_path = {p.path: p for p in pages}
    return [Citation(by_path[p].title, p) for p in coverage.ranked[:SEE_ALSO]]


def not_covered_text(nearby: Sequence[Citation]) -> str:
    if not nearby:
        return NOT_COVERED
    links = ", ".join(f"[{c.title}]({c.path})" for c in nearby)
    return f"{NOT_COVERED} See also (nearby pages, not an answer): {links}"


def not_covered(
    coverage: Coverage,
    pages: Sequence[Page],
    usage: Usage,
    question: str,
    hops: list[Hop],
    findings: list[Finding],
) -> Answer:
    """The answer to a question the pages read do not answer: says so, names the nearby
    pages, cites nothing."""
    nearby = see_also(coverage, pages)
    lacking = ", ".join(sorted(coverage.missing)[:8]) or "none"
    finding = Finding(
        "coverage",
        f"not covered: the best sentences of the pages read hold {coverage.score:.0%} of the "
        f"question's terms by weight (terms no page read has: {lacking}), so no answer was "
        "written",
    )
    return Answer(
        not_covered_text(nearby),
        [],
        [p.path for p in pages],
        usage,
        question,
        covered=False,
        findings=[*findings, finding],
        hops=hops,
        see_also=nearby,
    )
