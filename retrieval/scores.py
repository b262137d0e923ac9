"""Scoring an answer against a golden question, and a run of them against the last.

Each answer gets one outcome:

- ``right``: the wiki covers the question, and the answer states every expected fact
  with each cited span supporting its claim;
- ``right_abstention``: the wiki must not cover it, and the answer declines;
- ``wrong``: an expected fact is missing, or a question the wiki must not cover was
  answered;
- ``missed``: the wiki covers the question, and the answer declined it;
- ``unsupported``: the facts are there, but a claim cites a span that does not support
  it (retrieval/places.py);
- ``error``: no answer (the model failed or timed out).

A fact is stated when the answer holds it as written (any case, any spacing), or holds
each of its words (any inflection) and each of its numbers, names and dates in any
spelling kb_ai.grounding knows ("thirty" for 30).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kb_ai.grounding import Evidence, extract_claims, normalise
from retrieval.answer import Answer
from retrieval.golden import GoldenQuestion
from retrieval.terms import held, terms

__all__ = ["OUTCOMES", "Comparison", "Scored", "compare", "fact_stated", "score_answer", "totals"]

OUTCOMES = ("right", "right_abstention", "wrong", "missed", "unsupported", "error")
GOOD = frozenset(("right", "right_abstention"))
_LINK = re.compile(r"\[([^\]\n]{1,300})\]\(([^)\s]{1,300})\)")


@dataclass(frozen=True)
class Scored:
    """One golden question, its answer as scored, and why it scored so."""

    golden: GoldenQuestion
    outcome: str
    detail: str = ""
    answer: str = ""
    covered: bool = False
    citations: list[str] = field(default_factory=list)
    faithfulness: float | None = None
    unsupported: list[str] = field(default_factory=list)  # claims their span does not support
    calls: int = 0
    seconds: float = 0.0

    @property
    def good(self) -> bool:
        return self.outcome in GOOD

    def as_dict(self) -> dict[str, Any]:
        return {
            "question": self.golden.question,
            "id": self.golden.id,
            "line": self.golden.line,
            "expect": self.golden.expect,
            "outcome": self.outcome,
            "detail": self.detail,
            "answer": self.answer,
            "covered": self.covered,
            "citations": self.citations,
            "faithfulness": self.faithfulness,
            "unsupported": self.unsupported,
            "calls": self.calls,
            "seconds": round(self.seconds, 2),
        }


def _plain(text: str) -> str:
    return " ".join(_LINK.sub(lambda m: m.group(1), text).split())


def fact_stated(fact: str, answer: str) -> bool:
    """Whether ``answer`` states ``fact`` (see the module's docstring)."""
    said = _plain(answer)
    if " ".join(normalise(fact).lower().split()) in normalise(said).lower():
        return True
    if not terms(fact):
        return False  # nothing to look for but the words as written
    wanted, have = terms(fact), terms(said)
    words = frozenset(t for t in wanted if not t[0].isdigit())
    if len(held(words, have)) < len(words):
        return False
    claims = extract_claims(fact)
    spelled = {c.value for c in claims if c.kind == "number"}  # "thirty" said for 30
    if {t for t in wanted - have if t[0].isdigit()} - spelled:
        return False
    evidence = Evidence(said)
    return all(evidence.supports(c) for c in claims)


def score_answer(golden: GoldenQuestion, answer: Answer, seconds: float = 0.0) -> Scored:
    """The outcome of ``answer`` for ``golden``."""
    base = {
        "answer": answer.answer,
        "covered": answer.covered,
        "citations": [c.path for c in answer.citations],
        "faithfulness": answer.faithfulness,
        "unsupported": [c.claim for c in answer.claims if not c.supported],
        "calls": answer.usage.calls,
        "seconds": seconds,
    }
    if not golden.covered:
        if answer.covered:
            return Scored(golden, "wrong", "answered a question the wiki must not cover", **base)
        return Scored(golden, "right_abstention", **base)
    if not answer.covered:
        return Scored(golden, "missed", "declined a question the wiki covers", **base)
    missing = [f for f in golden.facts if not fact_stated(f, answer.answer)]
    if missing:
        listed = ", ".join(repr(f) for f in missing)
        return Scored(golden, "wrong", f"the answer does not state {listed}", **base)
    if base["unsupported"]:
        n = len(base["unsupported"])
        return Scored(
            golden, "unsupported", f"{n} claim(s) cite a span that does not support them", **base
        )
    return Scored(golden, "right", **base)


def error_scored(golden: GoldenQuestion, why: str, calls: int = 0, seconds: float = 0.0) -> Scored:
    return Scored(golden, "error", why, calls=calls, seconds=seconds)


def totals(scored: list[Scored]) -> dict[str, int]:
    counts = dict.fromkeys(OUTCOMES, 0)
    for s in scored:
        counts[s.outcome] += 1
    return {"questions": len(scored), **counts}


def score_of(scored: list[Scored]) -> float:
    """The share of questions answered right or declined right."""
    return round(sum(s.good for s in scored) / len(scored), 3) if scored else 0.0


def mean_faithfulness(scored: list[Scored]) -> float | None:
    values = [s.faithfulness for s in scored if s.faithfulness is not None]
    return round(sum(values) / len(values), 3) if values else None


@dataclass(frozen=True)
class Comparison:
    """This run against an earlier one, on the questions both asked."""

    against: str  # the earlier run's report
    common: int
    score_then: float
    score_now: float
    regressed: list[str]  # questions good then, not now
    improved: list[str]

    @property
    def drop(self) -> float:
        return round(self.score_then - self.score_now, 3)

    def as_dict(self) -> dict[str, Any]:
        return {
            "against": self.against,
            "common": self.common,
            "score_then": self.score_then,
            "score_now": self.score_now,
            "drop": self.drop,
            "regressed": self.regressed,
            "improved": self.improved,
        }


def compare(scored: list[Scored], earlier: dict[str, Any], against: str) -> Comparison | None:
    """This run against ``earlier`` (a run's JSON report); None when they share no question."""
    then = {
        q.get("question"): q.get("outcome") in GOOD
        for q in earlier.get("questions") or []
        if isinstance(q, dict)
    }
    now = {s.golden.question: s.good for s in scored if s.golden.question in then}
    if not now:
        return None
    return Comparison(
        against,
        len(now),
        round(sum(then[q] for q in now) / len(now), 3),
        round(sum(now.values()) / len(now), 3),
        [q for q, good in now.items() if then[q] and not good],
        [q for q, good in now.items() if good and not then[q]],
    )
