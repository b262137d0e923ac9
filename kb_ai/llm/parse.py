"""Tolerant reading of model replies: pure functions, no I/O.

Small local models wrap JSON in fences, think aloud first (``<think>...</think>``,
"Thought: ..."), or answer a bare list where an object holding that list was asked
for. These functions scan past fences and prose for the first JSON value that fits
the schema and check it lightly; when nothing fits they raise
:class:`LLMOutputError` with an excerpt.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from kb_ai.errors import LLMOutputError
from kb_ai.stages import stage_of

EXCERPT_CHARS = 200
#: A field may run to twice its schema's maxLength (characters) or maxItems (items),
#: plus a little for small bounds, before the reply is refused: models overshoot a bound
#: when it is not enforced (prompt and json_object modes), and the pipeline trims those
#: (a pick of 3 paths where 1 was asked); a field far past it is a looping or hostile
#: model, and is never stored or sent on in a prompt.
FIELD_SLACK = 2
EXTRA_CHARS = 100
EXTRA_ITEMS = 8


def field_bound(limit: int, extra: int) -> int:
    return FIELD_SLACK * limit + extra


_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_DECODER = json.JSONDecoder()
_TYPES: dict[str, type | tuple[type, ...]] = {
    "object": dict,
    "array": list,
    "string": str,
    "number": (int, float),
    "integer": int,
    "boolean": bool,
}


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """The start of ``text`` on one line, cut with an ellipsis, for error messages."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def strip_thinking(text: str) -> str:
    """Drop ``<think>...</think>`` blocks, and an unclosed one the reply starts with."""
    text = _THINK.sub("", text)
    head = text.lstrip()
    if head[:7].lower() == "<think>":
        return ""
    return text


def check_finished(
    text: str, finish_reason: str | None, *, model: str | None = None, stage: str | None = None
) -> None:
    """Refuse a reply cut off at the token limit, or one with nothing in it."""
    if finish_reason == "length":
        setting = (stage_of(stage).max_tokens_setting if stage else None) or "max_tokens"
        raise LLMOutputError(
            "reply was cut off at the token limit and is incomplete",
            model=model,
            body=excerpt(text),
            hint=f"raise {setting} or send less input",
        )
    if not strip_thinking(text).strip():
        raise LLMOutputError("reply was empty", model=model, body=excerpt(text))


def json_values(text: str) -> Iterator[Any]:
    """Every complete top-level JSON object or array in ``text``, in order.

    Scans for ``{`` and ``[`` and decodes from there; after a value is found, scanning
    resumes past its end, so values nested inside it are not listed again.
    """
    pos = 0
    while True:
        starts = [i for i in (text.find("{", pos), text.find("[", pos)) if i >= 0]
        if not starts:
            return
        start = min(starts)
        try:
            value, end = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError:
            pos = start + 1
            continue
        yield value
        pos = end


def fit_schema(value: Any, schema: dict) -> Any:
    """``value`` shaped to the schema's top level, or raise ValueError saying what is wrong.

    A bare list is wrapped when the schema is an object with exactly one array
    property. Checks the top-level type and the required keys, nothing deeper.
    """
    kind = schema.get("type")
    props = schema.get("properties") or {}
    if kind == "object" and isinstance(value, list):
        arrays = [
            name for name, p in props.items() if isinstance(p, dict) and p.get("type") == "array"
        ]
        if len(props) == 1 and len(arrays) == 1:
            value = {arrays[0]: value}
    if isinstance(kind, str) and kind in _TYPES:
        expected = _TYPES[kind]
        if not isinstance(value, expected) or (
            kind in ("number", "integer") and isinstance(value, bool)
        ):
            raise ValueError(f"expected a JSON {kind}, got {type(value).__name__}")
    if isinstance(value, dict):
        missing = [k for k in schema.get("required") or () if k not in value]
        if missing:
            raise ValueError(f"missing required key(s): {', '.join(missing)}")
    return value


def bounds_problem(value: Any, schema: dict, where: str = "the reply") -> str | None:
    """What is over its bound in ``value`` (see :func:`field_bound`; maxLength and
    maxItems, checked at every depth), or None when nothing is."""
    if isinstance(value, str):
        limit = _chars_bound(schema)
        if isinstance(limit, int) and len(value) > field_bound(limit, EXTRA_CHARS):
            return (
                f"{where} is {len(value):,} characters, over its bound of "
                f"{field_bound(limit, EXTRA_CHARS):,} ({FIELD_SLACK}x the schema's maxLength "
                f"{limit:,}, plus {EXTRA_CHARS})"
            )
        return None
    if isinstance(value, list):
        limit = schema.get("maxItems")
        if isinstance(limit, int) and len(value) > field_bound(limit, EXTRA_ITEMS):
            return (
                f"{where} has {len(value):,} items, over its bound of "
                f"{field_bound(limit, EXTRA_ITEMS):,} ({FIELD_SLACK}x the schema's maxItems "
                f"{limit:,}, plus {EXTRA_ITEMS})"
            )
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                problem = bounds_problem(item, items, f"{where}[{i}]")
                if problem:
                    return problem
        return None
    if isinstance(value, dict):
        props = schema.get("properties")
        if isinstance(props, dict):
            for key, item in value.items():
                sub = props.get(key)
                if isinstance(sub, dict):
                    name = key if where == "the reply" else f"{where}.{key}"
                    problem = bounds_problem(item, sub, name)
                    if problem:
                        return problem
    return None


def _chars_bound(schema: dict) -> int | None:
    """The most characters a string of ``schema`` may hold: its maxLength, or for an
    object the largest of its properties' (a model that sends a bare string where an
    object of bounded strings belongs, {fact, about, held} as "fact", gets the room of
    its longest field); None when unbounded."""
    if isinstance(schema.get("maxLength"), int):
        return schema["maxLength"]
    props = schema.get("properties")
    if schema.get("type") != "object" or not isinstance(props, dict) or not props:
        return None
    bounds = [_chars_bound(p) if isinstance(p, dict) else None for p in props.values()]
    return None if None in bounds else max(b for b in bounds if b is not None)


def check_bounds(
    value: Any, schema: dict, *, stage: str | None = None, model: str | None = None
) -> None:
    """Refuse a parsed reply with a field far over its schema bound (see FIELD_SLACK)."""
    problem = bounds_problem(value, schema)
    if problem:
        what = f"the {stage} reply" if stage else "the reply"
        raise LLMOutputError(
            f"{what} is refused: {problem}",
            model=model,
            hint="the model is looping or ignoring the schema; it is not stored or sent on",
        )


def parse_json(text: str, schema: dict | None = None, *, model: str | None = None) -> Any:
    """The first JSON value in a reply that fits ``schema`` (any value when it is None)."""
    body = strip_thinking(text)
    problem = "no JSON object or array found"
    for value in json_values(body):
        if schema is None:
            return value
        try:
            return fit_schema(value, schema)
        except ValueError as exc:
            problem = str(exc)
    raise LLMOutputError(
        f"reply is not usable JSON ({problem}): {excerpt(text)!r}",
        model=model,
        body=excerpt(text, 2000),
    )


def parse_reply(
    text: str,
    schema: dict | None,
    *,
    finish_reason: str | None = None,
    model: str | None = None,
    stage: str | None = None,
) -> Any | None:
    """Check a reply is complete; with a schema, return its parsed JSON (else None),
    every field within its bound."""
    check_finished(text, finish_reason, model=model, stage=stage)
    if schema is None:
        return None
    data = parse_json(text, schema, model=model)
    check_bounds(data, schema, stage=stage, model=model)
    return data
