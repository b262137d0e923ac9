"""JSON schemas of the compile stages' replies.

Every array has maxItems and every string maxLength: small models loop until the
token limit on open lists, and a bounded schema keeps every reply valid and finite
under constrained decoding. Choices from a closed set (article types, existing paths)
are enums.
"""

from __future__ import annotations

from typing import Any


def _str(max_len: int, description: str | None = None) -> dict[str, Any]:
    s: dict[str, Any] = {"type": "string", "maxLength": max_len}
    if description:
        s["description"] = description
    return s


def _list(items: dict[str, Any], max_items: int) -> dict[str, Any]:
    return {"type": "array", "items": items, "maxItems": max_items}


def _obj(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": required if required is not None else list(props),
        "additionalProperties": False,
    }


EXTRACTION_SCHEMA = _obj(
    {
        "title": _str(120, "a short title for what this source is about"),
        "summary": _str(400, "two or three sentences"),
        "topics": _list(_str(40), 8),
        "concepts": _list(_obj({"name": _str(80), "description": _str(400)}), 12),
        "entities": _list(_obj({"name": _str(80), "kind": _str(40), "description": _str(300)}), 12),
        "decisions": _list(_obj({"what": _str(300), "why": _str(500), "who": _str(120)}), 12),
        "facts": _list(
            _obj(
                {
                    "fact": _str(400),
                    "about": _str(
                        80,
                        "what the fact is about, a short noun phrase: the same words for"
                        " every fact about the same thing",
                    ),
                    "held": _str(
                        10,
                        "when the fact held, as the source dates it: YYYY-MM-DD or YYYY-MM;"
                        " empty when the source gives it no date",
                    ),
                }
            ),
            30,
        ),
        "enumerations": _list(_obj({"name": _str(120), "items": _list(_str(200), 40)}), 8),
        "action_items": _list(_obj({"what": _str(300), "who": _str(120)}), 12),
    }
)

# A transcript's extraction: the note fields, plus what a coding agent's session teaches
# that a note rarely states outright.
TRANSCRIPT_EXTRACTION_SCHEMA = _obj(
    {
        **EXTRACTION_SCHEMA["properties"],
        "corrections": _list(
            _obj(
                {
                    "rule": _str(300, "what the user said must or must not be done, as a rule"),
                    "why": _str(300, "the reason the user gave, or empty"),
                }
            ),
            12,
        ),
        "pitfalls": _list(
            _obj(
                {
                    "error": _str(300, "the error as it appeared"),
                    "cause": _str(300),
                    "fix": _str(400, "what fixed it, as it was done"),
                    "command_or_file": _str(200, "the command run or the file changed"),
                }
            ),
            10,
        ),
        "conventions": _list(_str(300, "a convention of the codebase or the team"), 12),
    }
)


def classification_schema(categories: list[str], existing_paths: list[str]) -> dict[str, Any]:
    """Where the material goes: existing articles to update (paths from the slice shown,
    as an enum) or new ones to create (type from the frozen category set)."""
    # Always an enum, "" for a new article: under constrained decoding a model cannot
    # write a title or a made-up path there (a 0.5B model did, on an empty wiki).
    target: dict[str, Any] = {"type": "string", "enum": ["", *existing_paths]}
    action = _obj(
        {
            "action": {"type": "string", "enum": ["create", "update"]},
            "path": target,
            "type": {"type": "string", "enum": categories},
            "title": _str(100),
            "reason": _str(200),
        }
    )
    return _obj({"articles": {**_list(action, 4), "minItems": 1}})


ARTICLE_SCHEMA = _obj(
    {
        "title": _str(100),
        "summary": _str(200, "one sentence, at most 200 characters"),
        "tags": _list(_str(40), 8),
        "body": _str(24_000, "the article in Markdown, without frontmatter and without the title"),
    }
)

PATCH_SCHEMA = _obj(
    {
        "summary": _str(200),
        "tags": _list(_str(40), 8),
        "patches": _list(
            _obj(
                {
                    "section": _str(
                        120, "the exact heading text of an existing section, or a new one"
                    ),
                    "op": {"type": "string", "enum": ["replace", "append", "add", "remove"]},
                    "content": _str(8_000),
                }
            ),
            8,
        ),
    }
)
