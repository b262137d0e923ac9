"""Follow-ups: after reading, what the model learned that the question needs next.

A multi-hop question ("where was the author of Dead Ernest born?") needs a page that
shares no word with it (the author's), named only inside the first page read. After each
reading the model says whether the pages are enough; if not, it returns search terms it
learned from them (the bridge: "Phoebe Atwood Taylor") and, when the pages link to
others, which linked pages to read. kb-ai runs the shortlist again with the question
and those terms, and the model picks among pages not yet read. No embeddings.

No follow-up is asked for when the pages read already hold every word of the question
(a one-page question, the common case, costs no extra call); otherwise the model says.

The reply is untrusted: at most ``MAX_TERMS`` terms of at most ``MAX_TERM_CHARS``
characters, printable text only, and only linked pages that were offered.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from wiki.words import index_text, query_terms, words

__all__ = ["FollowUp", "Hop", "follow_schema", "pages_hold_every_term", "parse_follow_up"]

MAX_TERMS = 3
MAX_TERM_CHARS = 80


@dataclass
class Hop:
    """One search-and-read round of a question, as ``ask --json`` reports it."""

    query: str
    pages: list[str] = field(default_factory=list)
    via: str = "search"  # search | links | paths

    def as_dict(self) -> dict[str, Any]:
        return {"query": self.query, "pages": self.pages, "via": self.via}


@dataclass(frozen=True)
class FollowUp:
    """What the model asked for after a reading: nothing (enough), terms, linked pages."""

    enough: bool
    terms: tuple[str, ...] = ()
    pages: tuple[str, ...] = ()


def follow_schema(linked: list[str], n: int) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "enough": {"type": "boolean"},
        "search": {
            "type": "array",
            "items": {"type": "string", "maxLength": MAX_TERM_CHARS},
            "maxItems": MAX_TERMS,
        },
    }
    if linked and n > 0:
        properties["pages"] = {
            "type": "array",
            "items": {"type": "string", "enum": linked},
            "maxItems": n,
        }
    return {
        "type": "object",
        "properties": properties,
        "required": ["enough", "search"],
        "additionalProperties": False,
    }


def parse_follow_up(data: object, linked: list[str], n: int) -> FollowUp:
    """The follow-up a reply asks for; anything malformed counts as "enough"."""
    if not isinstance(data, dict):
        return FollowUp(True)
    terms: list[str] = []
    for term in data.get("search") or []:
        if not isinstance(term, str):
            continue
        clean = " ".join("".join(ch for ch in term if ch.isprintable()).split())
        if (
            clean
            and len(clean) <= MAX_TERM_CHARS
            and clean.casefold() not in (t.casefold() for t in terms)
        ):
            terms.append(clean)
    offered = set(linked)
    pages = [
        p for p in dict.fromkeys(data.get("pages") or []) if isinstance(p, str) and p in offered
    ]
    enough = data.get("enough") is True or not (terms or pages)
    if enough:
        return FollowUp(True)
    return FollowUp(False, tuple(terms[:MAX_TERMS]), tuple(pages[: max(n, 0)]))


# Words that say what kind of answer is wanted (how long, how many), not what about.
_ASKING = frozenset(
    ["long", "often", "many", "much", "old", "far", "big", "large", "first", "last", "kind", "type"]
)


def pages_hold_every_term(question: str, texts: Iterable[str]) -> bool:
    """Whether every meaningful word of ``question`` is in ``texts`` (cut as the search
    cuts them; a word also counts when a page has a form of it: move, moved; deploys,
    deployment)."""
    found = set(words(" ".join(index_text(t) for t in texts).casefold()))
    wanted = [
        t.text
        for t in query_terms(question)
        if not t.prefix and not t.unless and t.text not in _ASKING
    ]
    if not wanted:
        return False
    for term in wanted:
        if term in found:
            continue
        stem = term[: max(3, len(term) - 2)]
        if not any(w.startswith(stem) for w in found):
            return False
    return True
