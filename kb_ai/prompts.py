"""Prompts are Jinja2 files beside the code that renders them.

A prompt file defines two blocks, ``system`` and ``user``; rendering one gives the
chat messages. Undefined variables fail loudly (StrictUndefined). A prompt's version
is a hash of its file, recorded with every extraction so a changed prompt shows up as
lag in ``kb-ai status`` instead of a silent recompile.

The text a prompt quotes (a source, an article, a page) sits between delimiter tags of
the prompt's own (``<source>`` ... ``</source>``). Every value a template prints has the
delimiter tags the library's prompts use neutralised (``</source>`` becomes
``&lt;/source>``), so no quoted text can close its delimiter and speak as the prompt.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any

import jinja2


def _tojson(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=None)


# a line of a prompt file that is only a tag: <source>, </source>, <page title="...">
_DELIMITER_LINE = re.compile(r"^[ \t]*</?([A-Za-z][\w-]*)(?:\s[^>\n]*)?>[ \t]*$", re.M)


def _delimiters(directory: Path) -> frozenset[str]:
    names: set[str] = set()
    for path in directory.glob("*.j2"):
        names.update(m.group(1).lower() for m in _DELIMITER_LINE.finditer(path.read_text()))
    return frozenset(names)


def neutraliser(names: frozenset[str]) -> Callable[[Any], Any]:
    """A Jinja2 ``finalize``: each printed string with the tags ``names`` (opening or
    closing, any case or spacing) turned into text that reads the same and closes nothing."""
    if not names:
        return lambda value: value
    tag = re.compile(
        r"<(?=\s*/?\s*(?:" + "|".join(sorted(map(re.escape, names))) + r")(?![\w-]))", re.I
    )

    def finalize(value: Any) -> Any:
        return tag.sub("&lt;", value) if isinstance(value, str) else value

    return finalize


class PromptLibrary:
    """The prompt templates of one directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._versions: dict[str, str] = {}

    @cached_property
    def delimiters(self) -> frozenset[str]:
        """The tag names this library's prompt files quote text between."""
        return _delimiters(self.directory)

    @cached_property
    def env(self) -> jinja2.Environment:
        env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(str(self.directory)),
            undefined=jinja2.StrictUndefined,
            autoescape=False,
            keep_trailing_newline=False,
            trim_blocks=True,
            lstrip_blocks=True,
            # The prompt files ship with the package: no stat per render to see if
            # they changed (each was a GIL hand-off on the compile's event loop).
            auto_reload=False,
            finalize=neutraliser(self.delimiters),
        )
        env.filters["tojson"] = _tojson
        return env

    def render(self, name: str, **context: Any) -> list[dict[str, str]]:
        """The messages of prompt ``name`` (file ``<name>.j2``) for this context."""
        template = self.env.get_template(f"{name}.j2")
        ctx = template.new_context(context)
        messages = []
        for role in ("system", "user"):
            block = template.blocks.get(role)
            if block is None:
                continue
            text = "".join(block(ctx)).strip()
            if text:
                messages.append({"role": role, "content": text})
        if not messages:
            raise ValueError(f"prompt {name!r} defines neither a system nor a user block")
        return messages

    def version(self, name: str) -> str:
        """A short hash of the prompt file: changes whenever the prompt does.

        Read once per library (a run asks for it per source; the files are part of the
        installed package and do not change under a running process)."""
        if name not in self._versions:
            source = (self.directory / f"{name}.j2").read_bytes()
            self._versions[name] = hashlib.sha256(source).hexdigest()[:12]
        return self._versions[name]
