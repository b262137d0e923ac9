"""Selection: the model's pick of pages among those offered, and its reply checked.

The reply is untrusted: the schema offers the candidate paths as an enum (a small model
under a grammar cannot invent one), and whatever comes back is normalised and kept only
if it was offered, so a real page is never lost to a leading slash or a missing .md and
an invented or escaping path never reaches the reader.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kb_ai.errors import LLMError
from retrieval.terms import shares_a_term, terms
from wiki import normalise_article_path
from wiki.feedback import names_in

__all__ = [
    "SelectionError",
    "best_match",
    "chosen_paths",
    "paths_schema",
    "related_pages",
    "selection_failed",
]


class SelectionError(LLMError):
    """Page selection failed, so there is no context to answer from."""


def selection_failed(exc: LLMError) -> SelectionError:
    """The error a user sees when a model call of page selection failed."""
    return SelectionError(
        f"Page selection failed, so no answer was given: {exc}",
        model=exc.model,
        status=exc.status,
        body=exc.body,
        hint="try again, or name the pages with --paths",
    )


def paths_schema(paths: list[str], k: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "paths": {"type": "array", "items": {"type": "string", "enum": paths}, "maxItems": k}
        },
        "required": ["paths"],
        "additionalProperties": False,
    }


def chosen_paths(data: object, offered: list[str], limit: int) -> tuple[list[str] | None, bool]:
    """The offered paths a reply picked, in its order (None when it has no list), and
    whether the reply is worth keeping (not when every path it named was invented)."""
    picked = data.get("paths") if isinstance(data, dict) else None
    if not isinstance(picked, list):
        return None, False
    allowed = set(offered)
    chosen: list[str] = []
    for p in picked:
        if isinstance(p, str):
            path = normalise_article_path(p)
            if not path.startswith(("wiki/", "also/")):  # also/: another KB's page
                path = f"wiki/{path}"
            if path in allowed and path not in chosen:
                chosen.append(path)
    return chosen[:limit], bool(chosen) or not picked


def related_pages(texts: dict[str, str], wanted: set[str], question: str) -> list[str]:
    """Of the picked pages (path -> text, in the order picked), those sharing a term with
    the question (``wanted``), and those sharing one with the names these pages mention:
    a later hop's page, as the shortlist's feedback search found it (wiki/feedback.py).
    A page of neither is on another subject, and is not read."""
    direct = [p for p, text in texts.items() if shares_a_term(wanted, text)]
    named = terms(" ".join(n for p in direct for n in names_in(texts[p], question)))
    return [p for p, text in texts.items() if p in direct or shares_a_term(named, text)]


def best_match(
    search: Callable[[str, int], list[str]],
    read: Callable[[str], str],
    question: str,
    wanted: set[str],
) -> list[str]:
    """The page the question's words match best (the search's first hit), if it holds
    at least half of them; read beside a small model's pick, which misses often (5 of 10
    example questions picked the wrong page). A page with one word of a question it does
    not answer ("monitoring" for "which monitoring vendor do we pay for?") is left out,
    so that the model can still say the wiki does not cover it."""
    for path in search(question, 1)[:1]:
        if wanted and 2 * len(wanted & terms(read(path))) >= len(wanted):
            return [path]
    return []
