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
facts sit in two sentences). Beyond the share, the pages read must hold every name the
question asks about (a capitalised word, a number, a code span), its names of several
words written whole, and the sentences that hold most of it an answer of the kind it
asks for (who: a person, when: a date, how many: a number; retrieval/asked.py); a short
question's names must be held together, half their weight in one sentence. Below
``THRESHOLD``, or lacking one of those, the question is not covered: the answer says so
and names the closest pages read as "see also", claiming nothing from them. The
threshold and the checks were chosen on the development sets of bench/ask/coverage.py
only (docs/benchmarks.md gives the fresh held-out figures).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from kb_ai.llm import Usage
from retrieval.answer import Answer
from retrieval.asked import asks_choice, lacking_kind, phrase_missing, straddling
from retrieval.checks import NOT_COVERED, Finding
from retrieval.extractive import units_of
from retrieval.follow import Hop
from retrieval.pages import Citation, Page
from retrieval.terms import content_terms, held, terms

THRESHOLD = 0.5
SPAN = 2
# A sentence holds the question's terms the headings it sits under hold ("It is now 15
# minutes." under "## Session cache TTL"). Not its page's title: that is a sentence of
# its own here, and read into every sentence it cost right answers on the development
# sets (133 -> 131 at the threshold, one more abstention). The sets' pages have no
# headings, so their figures are the same with and without.
HEADINGS = True
# A word that is not a name ("born", "author") weighs this much of a name's weight: the
# page that answers often says it otherwise ("writer from Boston"), a name it must hold.
WORD_WEIGHT = 0.3
# A name: a capitalised word, a code span or a number, anywhere but at the start.
_NAME = re.compile(r"`[^`]+`|\b[A-Z][\w'’.-]*|\b\d[\d,.]*")
SEE_ALSO = 3


@dataclass(frozen=True)
class Coverage:
    score: float  # share of the question's weight the best sentences hold, 0..1
    wanted: frozenset[str]  # the question's content terms
    missing: frozenset[str]  # those no sentence of the pages read holds
    ranked: list[str]  # page paths, the page holding most of the question first
    lacks: str = ""  # what the answering sentences lack (a name, a date), "" when nothing

    def covered(self, threshold: float = THRESHOLD) -> bool:
        """Whether the question is covered; a threshold of 0 turns the gate off."""
        return threshold <= 0 or not self.wanted or (self.score >= threshold and not self.lacks)


def measure(question: str, pages: Sequence[Page], span: int = SPAN) -> Coverage:
    """How much of ``question`` the sentences of ``pages`` answer (see the module)."""
    wanted = frozenset(content_terms(question))
    found: list[tuple[set[str], str, str]] = []
    n = 1
    for page in pages:
        for unit in units_of(f"{page.title}.\n{page.text}"):
            n += 1
            text = unit.text  # read with its table's header and its list's lead-in
            # and the headings it sits under ("It is now 15 minutes." under "## TTL")
            above = unit.section if HEADINGS else ()
            hit = held(wanted, terms(" ".join([text, *unit.header, unit.lead, *above])))
            if hit:
                found.append((hit, page.path, text))
    have = {t for hit, *_ in found for t in hit}
    # A Chinese or Japanese question cuts into bigrams across its word boundaries
    # (成渝高铁: 渝高), which no page holds: such a bigram counts only when its neighbours
    # in the question are not held either (the question's words are missing, not cut).
    wanted = frozenset(t for t in wanted if t in have or t not in straddling(question, have))
    if not wanted:
        return Coverage(1.0, wanted, frozenset(), [p.path for p in pages])
    # rarity among all the sentences read; a term none holds weighs as one only one
    # holds (it may be said otherwise), so a lone missing word does not sink a question
    df = Counter(t for hit, *_ in found for t in hit)
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
    for hit, path, _ in found:
        by_page[path] = max(by_page.get(path, 0.0), sum(weight[t] for t in hit))
    ranked = sorted((p.path for p in pages), key=lambda p: -by_page.get(p, 0.0))
    score = sum(weight[t] for t in got) / total
    lacks = _lacks(question, pages, found, weight, names & wanted - have, len(names & wanted))
    if not lacks and CHECK_TOGETHER:
        lacks = _apart(question, found, weight, names & wanted)
    return Coverage(score, wanted, wanted - have, ranked, lacks)


# Checks beyond the share of terms (retrieval/asked.py), each chosen on the development sets.
CHECK_KIND = True
CHECK_NAMES = True
CHECK_PHRASES = True
# The sentences that would answer: those holding at least this share of the best one's weight.
ANSWERING = 0.5
# A short question (at most TOGETHER_TERMS content terms) asks one fact about its names:
# some sentence read must hold at least TOGETHER of their weight together. A distractor
# page written about the same names holds them in sentences that state other facts
# ("Mozart was very young" and "a piece of music" do not say which piece is a cliche).
CHECK_TOGETHER = True
TOGETHER = 0.5
TOGETHER_TERMS = 8


def _apart(
    question: str,
    found: list[tuple[set[str], str, str]],
    weight: dict[str, float],
    names: frozenset[str],
) -> str:
    """Whether the sentences read hold the names of a short question only apart ("" when
    together enough, when it has no names, is long, or is a choice between names: "A or
    B?" is answered by a sentence on each)."""
    if not names or len(weight) > TOGETHER_TERMS or asks_choice(question):
        return ""
    total = sum(weight[t] for t in names) or 1.0
    best = max((sum(weight[t] for t in hit & names) for hit, *_ in found), default=0.0)
    if best >= TOGETHER * total:
        return ""
    return "no sentence read holds its names together (" + ", ".join(sorted(names)[:4]) + ")"


def _lacks(
    question: str,
    pages: Sequence[Page],
    found: list[tuple[set[str], str, str]],
    weight: dict[str, float],
    missing_names: frozenset[str],
    asked_names: int,
) -> str:
    """What the pages read lack to answer ``question`` beyond the share of its terms:
    a name it asks about, a name of several words written whole, or (in the sentences
    that hold most of it) an answer of the kind it asks for; "" when nothing."""
    # one name in four may be missing (misspelt, said otherwise); more is another subject
    if CHECK_NAMES and missing_names and len(missing_names) * 4 > asked_names:
        return "no page read names " + ", ".join(sorted(missing_names)[:4])
    if CHECK_PHRASES and (
        gone := phrase_missing(question, (f"{p.title}\n{p.text}" for p in pages))
    ):
        return "no page read writes " + ", ".join(f'"{g}"' for g in gone[:3])
    if CHECK_KIND and found:
        scored = sorted(
            ((sum(weight.get(t, 0.0) for t in hit), text) for hit, _, text in found), reverse=True
        )
        top = [text for w, text in scored[:6] if w >= ANSWERING * scored[0][0]]
        if kind := lacking_kind(question, top):
            return f"the sentences holding the question's terms name no {kind.removeprefix('a ')}"
    return ""


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
    judged: Finding | None = None,
) -> Answer:
    """The answer to a question the pages read do not answer: says so, names the nearby
    pages, cites nothing. ``judged``: the coverage judge's finding, when it decided
    (retrieval/judge.py), else the evidence check's is given."""
    nearby = see_also(coverage, pages)
    lacking = ", ".join(sorted(coverage.missing)[:8]) or "none"
    why = f"; {coverage.lacks}" if coverage.lacks else ""
    finding = judged or Finding(
        "coverage",
        f"not covered: the best sentences of the pages read hold {coverage.score:.0%} of the "
        f"question's terms by weight (terms no page read has: {lacking}){why}, so no answer "
        "was written",
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
