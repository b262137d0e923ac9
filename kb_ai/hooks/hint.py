"""The optional prompt hook (`hooks install --prompt-hint`): the titles and paths of up to
three wiki pages that look relevant to the prompt, in one line of at most 300 bytes, and
no article text.

It runs before every prompt the agent sends, so it must cost little more than starting
Python: it imports only ``sqlite3`` and reads the wiki's search index (wiki/search.py
keeps it in ``.kb-ai/state.db``) with a plain query of its own, never the wiki package.
Its query is lighter than ``kb-ai ask``'s: the prompt's words of three letters or more
(the search's stop words left out; Chinese, Japanese and Korean runs as overlapping
pairs), any of them, ranked by bm25 over the articles' heads (title, keys, summary,
tags) and bodies as wiki/search.py weighs them, the heads counted again: the weights,
the stop words and the ranking query are kb_ai/lexicon.py's, which both read. Titles come from the master
index: a page it no longer lists is not offered. A search index of another shape (a
newer kb-ai's) or none at all gives no hint, like any failure of a hook.
The ``also`` knowledge bases' pages fill the three after the project's: from the indexes
questions keep of them in .kb-ai/also/ (kb_ai/hooks/catalog.shelves).

Where the shell hook is installed, this is its fallback: it answers ASCII prompts itself
with awk from a hint file of the same bm25 numbers (kb_ai/hooks/hintfile.py), which
must give the same line as this module; both read their bounds and wording from here.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping
from pathlib import Path

from kb_ai.hooks.catalog import index_lines, shelves
from kb_ai.lexicon import CJK_CLASS, STOP_WORDS, any_of, ranked_sql

MAX_PAGES = 3
MAX_BYTES = 300
TITLE_CHARS = 60
MAX_TERMS = 16
PROMPT_CHARS = 2000  # of a prompt, the part searched
PROJECT_LIMIT = (
    10  # the project's best pages taken before those the master index lacks are left out
)
HEAD = "kb-ai: wiki pages that may help: "
TAIL = "; the kb-ai MCP `ask` tool answers from them with citations."
STATE_DB = Path(".kb-ai") / "state.db"
# the words of three letters or more: a letter, then letters or digits; CJK runs apart
_TERM = re.compile(rf"[{CJK_CLASS}]+|[^\W\d_{CJK_CLASS}][^\W_{CJK_CLASS}]{{2,}}")
_CJK_CHAR = re.compile(rf"[{CJK_CLASS}]")


def terms(prompt: str) -> list[str]:
    """The words a prompt searches for, in order, each once."""
    found: dict[str, None] = {}
    for m in _TERM.finditer(prompt.casefold()):
        word = m.group()
        if _CJK_CHAR.match(word):
            pairs = [word[i : i + 2] for i in range(len(word) - 1)] or [word]
            found.update(dict.fromkeys(pairs))
        elif word not in STOP_WORDS:
            found[word] = None
    return list(found)[:MAX_TERMS]


def search(
    root: Path, prompt: str, limit: int = PROJECT_LIMIT, *, db: Path | None = None
) -> list[str]:
    """The paths of the articles that best match ``prompt``, best first (in the search
    index ``db``: by default the knowledge base's own, in its state.db)."""
    words = terms(prompt)
    if not words:
        return []
    db = db or root / STATE_DB
    if not db.is_file():
        return []
    conn = sqlite3.connect(db, timeout=0.5)  # it only reads
    try:
        rows = conn.execute(ranked_sql(), {"q": any_of(words), "limit": limit}).fetchall()
    finally:
        conn.close()
    return [path for path, _ in rows]


def hint_item(title: str, path: str) -> str:
    """One page as the hint names it: its title (quotes made single, spaces squeezed,
    cut at TITLE_CHARS) and its path."""
    title = " ".join(title.replace('"', "'").split())
    title = title if len(title) <= TITLE_CHARS else title[: TITLE_CHARS - 1] + "…"
    return f'"{title}" ({path})'


def hint_line(pages: list[tuple[str, str]]) -> str:
    """The hint for ``pages`` ((title, path), best first): as many as fit in MAX_BYTES."""
    shown: list[str] = []
    for title, path in pages[:MAX_PAGES]:
        item = hint_item(title, path)
        if len((HEAD + "; ".join([*shown, item]) + TAIL).encode()) > MAX_BYTES:
            break
        shown.append(item)
    return HEAD + "; ".join(shown) + TAIL if shown else ""


def prompt_hint(root: Path, event: Mapping[str, object]) -> str:
    prompt = event.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return ""
    prompt = prompt[:PROMPT_CHARS]
    titles = {path: title for path, _, title, _ in index_lines(root)}
    pages = [(titles[p], p) for p in search(root, prompt) if p in titles]
    if len(pages) < MAX_PAGES:  # the also knowledge bases' pages after the project's
        pages += _shelf_pages(root, prompt, {t.casefold() for t in titles.values()})
    return hint_line(pages)


def _shelf_pages(root: Path, prompt: str, own_titles: set[str]) -> list[tuple[str, str]]:
    """(title, also/<name>/wiki/...) of the ``also`` knowledge bases' best pages, from the
    search indexes questions keep of them (.kb-ai/also/<name>.db); a title the project
    has too is the project's."""
    pages = []
    for name, shelf_root in shelves(root):
        db = root / ".kb-ai" / "also" / f"{name}.db"
        hits = search(shelf_root, prompt, MAX_PAGES, db=db)
        if not hits:
            continue
        titles = {path: title for path, _, title, _ in index_lines(shelf_root)}
        pages += [
            (titles[p], f"also/{name}/{p}")
            for p in hits
            if p in titles and titles[p].casefold() not in own_titles
        ]
    return pages
