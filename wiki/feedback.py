"""Feedback: a second search with the names the best-matching page mentions.

A multi-hop question names its first page, not the later ones: "who is the spouse of
the director of Jump for Glory?" finds the page on Jump for Glory, but the page the
next hop needs is about Raoul Walsh, whom only that first page names, and no ranking
of the question's own words reaches it. So the shortlist searches twice: the question,
then the question with the proper names written in its best hit (pseudo-relevance
feedback; no model, no embeddings). The second search's new pages are interleaved with
the first's below its top ``KEEP``, so what the question itself finds best stays first.

Measured with bench/ask/recall_musique.py (each paragraph one article; recall@50 of
gold pages): MuSiQue-50 0.798 -> 0.900 (later-hop pages 0.652 -> 0.826, all-gold 0.54 ->
0.76), HotpotQA-100 0.970 -> 1.000. Tried on the same data: the names of the top 2 or 3
hits (0.86-0.87: the second hit is more often a distractor, and its names crowd out the
first's), one search per name (0.88, several times the cost), ``KEEP`` 10 to 30 and
``MAX_NAMES`` 15 to 60 (all within 0.893-0.900; 10 names: HotpotQA 0.995). 15 names,
not more: every name is a clause the search must count and score, and at 10,000
articles the second search is what a hop's own time grows by (bench/ask/hops_time.py).
Names are capitalised Latin words,
so a Chinese or Japanese best hit adds nothing: the first search alone decides there.
"""

from __future__ import annotations

import re

from wiki.search import SearchIndex
from wiki.words import words

__all__ = ["names_in", "search_with_feedback"]

KEEP = 20  # hits of the question's own search kept ahead of the feedback's
MAX_NAMES = 15  # names of the best hit added to the question
_TEXT_CHARS = 20_000  # of the best hit read for names

_CAPITAL = "[A-ZÀ-ÖØ-Þ]"
_WORD_OF_NAME = rf"(?:{_CAPITAL}[a-z]?\.|{_CAPITAL}[\w'’-]*)"  # St., B., Taylor, O'Neil
_NAME = re.compile(
    rf"\b{_WORD_OF_NAME}"
    rf"(?:[ \t]+(?:(?:of|the|de|von|van|and|for|la|le|du|del|da)[ \t]+)?{_WORD_OF_NAME})*"
)
# Capitalised because they open a sentence, not because they name something.
_OPENERS_TEXT = """
    The A An In On At He She It His Her They This That These Those After Before When
    While During From By For As With Its Their There
"""
_OPENERS = frozenset(_OPENERS_TEXT.split())


def names_in(text: str, question: str) -> list[str]:
    """The proper names written in ``text`` (runs of capitalised words, "of"/"van"/...
    inside them), in order, without repeats and without those the question already has."""
    asked = {w.casefold() for w in words(question)}
    found: list[str] = []
    for match in _NAME.finditer(text):
        parts = match.group().strip(" .").split()
        while parts and parts[0] in _OPENERS:
            parts = parts[1:]
        if not parts or all(w.strip(".").casefold() in asked for w in parts):
            continue
        name = " ".join(parts)
        if name not in found:
            found.append(name)
    return found


def search_with_feedback(index: SearchIndex, query: str, limit: int) -> list[str]:
    """Paths for ``query``, best first: its own hits, and from rank ``KEEP`` on, those of
    the query with the names of its best hit, interleaved with the rest of its own."""
    first = [hit.path for hit in index.search(query, limit=limit)]
    if not first:
        return []
    names = names_in(index.stored_text(first[0])[:_TEXT_CHARS], query)[:MAX_NAMES]
    if not names:
        return first
    kept = first[:KEEP]
    seen = set(kept)
    extra = [
        hit.path
        for hit in index.search(f"{query} {' '.join(names)}", limit=limit)
        if hit.path not in seen
    ]
    rest = first[KEEP:]
    out = list(kept)
    for i in range(max(len(extra), len(rest))):
        for path in (extra[i] if i < len(extra) else None, rest[i] if i < len(rest) else None):
            if path is not None and path not in seen:
                seen.add(path)
                out.append(path)
    return out[:limit]
