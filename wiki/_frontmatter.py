"""Frontmatter: a YAML header between ``---`` lines, then the Markdown body.

Written with PyYAML's safe dumper, which quotes any string YAML would read as something
else ('no', '1.10', '2026-11-29'). Read with a loader that resolves no implicit types, so
every scalar comes back as the string it was, even in a hand-edited file where a date or
a version was left unquoted. One blank line separates header and body; the body is kept
byte for byte.
"""

from __future__ import annotations

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
    try:
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
