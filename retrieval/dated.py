"""Current before past: when pages read disagree on a fact, the newest dated one is the
current value and the older ones are its history.

A small model compiles each note into its own article (compiler/source_article.py), so
two dated notes on the session cache ("TTL 30 minutes" on 1 March, "now 15 minutes" on
20 March) reach an answer as two pages, and the compile's dated-fact rules never meet
both. Each page read carries its date (``page_date``: a full date in its title or its
first lines, "Date: 2026-03-02", "Weekly sync, 16 March 2026"; else one in its sources'
file names). ``superseded`` pairs sentences of two dated pages that state the same
fact (they share most of their words, the question's among them) with different
numbers or dates: the older is not offered to the model on its own, it is quoted after
the newer as its history, both cited.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from kb_ai.grounding import extract_claims
from retrieval.terms import terms

_ISO = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")
_HEAD_CHARS = 400
# Sentences on one fact: of the smaller one's words (numbers aside), at least this share
# is in the other, and at least MIN_SHARED words in all.
SAME_FACT = 0.5
MIN_SHARED = 2


def page_date(title: str, body: str, sources: Iterable[str] = ()) -> str:
    """The date a page speaks from, as YYYY-MM-DD, or "" when it gives none."""
    for claim in extract_claims(f"{title}\n{body[:_HEAD_CHARS]}", ("date",)):
        if _ISO.fullmatch(claim.value):
            return claim.value
    for name in sources:
        if m := _ISO.search(name.rsplit("/", 1)[-1]):
            return m.group(0)
    return ""


def _values(text: str) -> set[str]:
    return {c.value for c in extract_claims(text, ("number", "date"))}


def _facts(text: str) -> tuple[set[str], set[str]]:
    """A sentence's numbers and dates, and its other terms."""
    values = _values(text)
    return values, terms(text) - values


def same_fact(older: str, newer: str, asked: set[str]) -> bool:
    """Whether two sentences state one fact with different values: most words shared
    (one of the question's among them), and each states a number or date the other
    does not."""
    return _same(_facts(older), _facts(newer), asked)


def _same(old: tuple[set[str], set[str]], new: tuple[set[str], set[str]], asked: set[str]) -> bool:
    (old_values, a), (new_values, b) = old, new
    if not old_values - new_values or not new_values - old_values:
        return False
    a, b = a - new_values, b - old_values
    shared = a & b
    if len(shared) < MIN_SHARED or (asked and not shared & asked):
        return False
    return len(shared) >= SAME_FACT * min(len(a), len(b))


def superseded(items: Sequence[tuple[str, str, str]], asked: set[str]) -> dict[int, int]:
    """For ``items`` (sentence, page path, page date), older index -> the index of the
    newest sentence of another, later dated page that states the same fact otherwise."""
    dated = [(i, path, date) for i, (_, path, date) in enumerate(items) if date]
    if len({path for _, path, _ in dated}) < 2:
        return {}
    facts = {i: _facts(items[i][0]) for i, _, _ in dated}
    facts = {i: f for i, f in facts.items() if f[0]}
    out: dict[int, int] = {}
    for i, path, date in dated:
        if i not in facts:
            continue
        later = [
            (d, j)
            for j, p, d in dated
            if j in facts and d > date and p != path and _same(facts[i], facts[j], asked)
        ]
        if later:
            out[i] = max(later)[1]
    return out
