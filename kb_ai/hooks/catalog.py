"""The master index as the hooks read it: one line per article, ``- [Title](path) —
summary | keys: ...`` (the layout is the wiki's: wiki/catalog.py writes it). Read
directly, with one regular expression, so a hook imports nothing of the wiki package."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

MASTER_INDEX = Path("index") / "master-index.md"
_LINE = re.compile(
    r"^- \[(?P<title>.+?)\]\((?P<path>wiki/(?P<type>[^/]+)/[^)]+\.md)\)(?: — (?P<summary>.*?))?(?: \| keys: .*)?$"
)


def index_lines(root: Path) -> Iterator[tuple[str, str, str, str]]:
    """(path, type, title, summary) of every article the master index lists, in its order."""
    try:
        text = (root / MASTER_INDEX).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return
    for line in text.splitlines():
        m = _LINE.match(line)
        if m is not None:
            title = m["title"].replace("\\[", "[").replace("\\]", "]")
            summary = (m["summary"] or "").replace("\\|", "|")
            yield m["path"], m["type"], title, summary


def shelves(root: Path) -> list[tuple[str, Path]]:
    """(name, root) of the other knowledge bases kb-ai.toml's ``also`` names, in its
    order, as a question last opened them (kb_ai/service/also.py records where each is
    in .kb-ai/also/shelves.json; one never opened yet is left out, as is a ``--also`` of
    one command). Any fault of either file: none."""
    import json
    import tomllib

    try:
        configured = tomllib.loads((root / "kb-ai.toml").read_text(encoding="utf-8")).get("also")
        recorded = json.loads((root / ".kb-ai" / "also" / "shelves.json").read_text("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return []
    if not isinstance(configured, list) or not isinstance(recorded, list):
        return []
    where = {
        r.get("entry"): (str(r.get("name")), Path(str(r.get("root"))))
        for r in recorded
        if isinstance(r, dict)
    }
    return [where[e.strip()] for e in configured if isinstance(e, str) and e.strip() in where]
