"""Selection: the model's pick of pages among those offered, and its reply checked.

The reply is untrusted: the schema offers the candidate paths as an enum (a small model
under a grammar cannot invent one), and whatever comes back is normalised and kept only
if it was offered, so a real page is never lost to a leading slash or a missing .md and
an invented or escaping path never reaches the reader.
"""

from __future__ import annotations

from typing import Any

from kb_ai.errors import LLMError
from wiki import normalise_article_path

__all__ = ["SelectionError", "chosen_paths", "paths_schema", "selection_failed"]


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
            if not path.startswith("wiki/"):
                path = f"wiki/{path}"
            if path in allowed and path not in chosen:
                chosen.append(path)
    return chosen[:limit], bool(chosen) or not picked
