"""Frontmatter: a YAML header between ``---`` lines, then the Markdown body.

Written with PyYAML's safe dumper, which quotes any string YAML would read as something
else ('no', '1.10', '2026-11-29'). Read with a loader that resolves no implicit types, so
every scalar comes back as the string it was, even in a hand-edited file where a date or
a version was left unquoted. One blank line separates header and body; the body is kept
byte for byte.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from kb_ai.errors import KbAiError

DELIMITER = "---"


# LibYAML's C loader and dumper where PyYAML was built with them: the pure-Python ones
# took ~0.7 ms a header, several times per source compiled and per page read.
_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _StringLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """A safe loader for which every plain scalar is a string."""


_StringLoader.yaml_implicit_resolvers = {}


def dump_document(meta: dict[str, Any], body: str) -> str:
    """The file text for ``meta`` (in its key order) and ``body``."""
    header = yaml.dump(
        meta,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1_000_000,
    )
    return f"{DELIMITER}\n{header}{DELIMITER}\n\n{body}"


def load_document(text: str, where: str) -> tuple[dict[str, Any], str]:
    """The header (strings, lists and mappings only) and body of ``text``.

    A file without a header has an empty one. ``where`` names the file in errors.
    """
    text = text.removeprefix("\ufeff")
    # Split on "\n" only: str.splitlines would also break at U+2028 and friends.
    lines = text.split("\n")
    lines = [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    if not lines or lines[0].rstrip() != DELIMITER:
        return {}, text
    for i, line in enumerate(lines[1:], start=1):
        if line.rstrip() == DELIMITER:
            header = "".join(lines[1:i])
            rest = lines[i + 1 :]
            break
    else:
        raise KbAiError(
            f"{where}: the frontmatter has no closing '---' line",
            hint="fix the file by hand or restore it with git",
        )
    if rest and rest[0].strip() == "":
        rest = rest[1:]
    meta = _simple_header(header)
    try:
        if meta is None:
            meta = yaml.load(header, Loader=_StringLoader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        raise KbAiError(
            f"{where}: the frontmatter is not valid YAML: {exc}",
            hint="fix the file by hand or restore it with git",
        ) from exc
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise KbAiError(
            f"{where}: the frontmatter is not a mapping of keys to values",
            hint="fix the file by hand or restore it with git",
        )
    return meta, "".join(rest)


# The headers kb-ai writes use a small part of YAML: "key: scalar", "key: []" and
# "key:" followed by "- scalar" lines, each scalar plain or single-quoted. Read here
# without the YAML machinery (a lint of 1,000 articles spent most of its time in it);
# anything else, or anything doubtful, goes to the YAML loader.
_KEY_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):(?: (.*))?")
_ITEM_LINE = re.compile(r" *- (.*)")
_CONTROL = re.compile("[\x00-\x1f\x85\u2028\u2029\ufeff]")
_PLAIN_START = set("-?:,[]{}#&*!|>'\"%@`")


def _scalar(text: str) -> str | None:
    """A plain or single-quoted scalar as YAML with no implicit types reads it, or None."""
    text = text.rstrip(" ")
    if not text:
        return None
    if text[0] == "'":
        inner = text[1:-1] if len(text) > 1 and text.endswith("'") else None
        if inner is None or "'" in inner.replace("''", ""):
            return None
        return inner.replace("''", "'")
    if text[0] in _PLAIN_START or ": " in text or " #" in text or text.endswith(":"):
        return None
    if _CONTROL.search(text):
        return None
    return text


def _simple_header(header: str) -> dict[str, Any] | None:
    meta: dict[str, Any] = {}
    items: list[str] | None = None
    blocks = []  # keys with nothing after the colon: a list follows, or nothing
    for line in header.split("\n"):
        if not line:
            continue
        if items is not None and (m := _ITEM_LINE.fullmatch(line)):
            value = _scalar(m.group(1))
            if value is None:
                return None
            items.append(value)
            continue
        m = _KEY_LINE.fullmatch(line)
        if m is None or m.group(1) in meta:
            return None
        rest = m.group(2)
        if rest is None or rest == "":
            items = []
            meta[m.group(1)] = items
            blocks.append(m.group(1))
        elif rest == "[]":
            items = None
            meta[m.group(1)] = []
        else:
            items = None
            value = _scalar(rest)
            if value is None:
                return None
            meta[m.group(1)] = value
    for key in blocks:  # "key:" with no items under it is an empty value
        if not meta[key]:
            meta[key] = ""  # (no implicit types: not None)
    return meta
