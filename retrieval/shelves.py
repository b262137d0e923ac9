"""Other knowledge bases consulted beside this one (the ``also`` setting), read only.

Each is a shelf with a name; its pages are named ``also/<name>/wiki/<type>/<slug>.md``
wherever this knowledge base's own are named ``wiki/...`` (the selection prompt, the
pages read, the citations), so a citation says which knowledge base it comes from. A
question searches each shelf's own index for candidates beside this knowledge base's;
this knowledge base's lines come first, so its pages win a tie. A shelf's search index
is kept in this knowledge base's state folder (``.kb-ai/also/<name>.db``): nothing is
written into the other knowledge base.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Collection, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from retrieval.candidates import estimate_tokens
from retrieval.pages import Page, read_page
from wiki import KnowledgeBase
from wiki.articles import article_mtimes
from wiki.indexing import catalog_lines, index_is_current, refresh_search_index
from wiki.search import SearchIndex

PREFIX = "also/"
SHELF_HITS = 50  # hits asked of each shelf's index for a question
_TITLE = re.compile(r"^- \[((?:\\.|[^\\\]])*)\]\(")


@dataclass(frozen=True)
class Shelf:
    """One other knowledge base: its name, where it is, and where its index is kept."""

    name: str
    kb: KnowledgeBase
    index_db: Path

    @property
    def prefix(self) -> str:
        return f"{PREFIX}{self.name}/"

    def inner(self, path: str) -> str:
        """``also/<name>/wiki/x.md`` as the shelf's own ``wiki/x.md``."""
        return path.removeprefix(self.prefix)

    def search(self, query: str, limit: int) -> list[tuple[str, str]]:
        """(path, catalog line) of its best pages for ``query``, both named as this
        knowledge base names them (``also/<name>/...``), best first."""
        self.index_db.parent.mkdir(parents=True, exist_ok=True)
        indexed = self.index_db.stat().st_mtime_ns if self.index_db.exists() else 0
        with closing(sqlite3.connect(self.index_db, timeout=5.0)) as conn:
            mtimes = article_mtimes(self.kb)  # one stat an article: what changed since
            changed = [p for p, m in mtimes.items() if m >= indexed]
            if changed or not index_is_current(conn, len(mtimes)):
                refresh_search_index(self.kb, conn, changed)
            hits = [h.path for h in SearchIndex(conn).search(query, limit=limit)]
            lines = catalog_lines(conn, hits)
        return [
            (self.prefix + p, lines[p].replace("](wiki/", f"]({self.prefix}wiki/", 1))
            for p in hits
            if p in lines
        ]

    def read(self, path: str, budget_chars: int) -> Page:
        page = read_page(self.kb, self.inner(path), budget_chars)
        return Page(path, page.title, page.text, page.cut)

    def text(self, path: str) -> str:
        try:
            return self.kb.resolve(self.inner(path), under="wiki").read_text(
                encoding="utf-8", errors="replace"
            )
        except FileNotFoundError:
            return ""


def shelf_of(shelves: Sequence[Shelf], path: str) -> Shelf | None:
    """The shelf a page path names (None: this knowledge base's own page)."""
    if not path.startswith(PREFIX):
        return None
    return next((s for s in shelves if path.startswith(s.prefix)), None)


def kb_name(path: str) -> str:
    """The knowledge base a page path names: the shelf's name, "" for this one."""
    if not path.startswith(PREFIX):
        return ""
    return path[len(PREFIX) :].split("/", 1)[0]


def shelf_lines(
    shelves: Sequence[Shelf],
    query: str,
    budget_tokens: int,
    offered: Sequence[str],
    exclude: Collection[str] = (),
) -> list[tuple[str, str]]:
    """(path, catalog line) of the shelves' best pages for ``query``, each shelf in turn
    with an equal share of ``budget_tokens``. A page titled as one of this knowledge
    base's ``offered`` lines is left out (this knowledge base's page wins the tie), and
    so are the ``exclude`` paths (pages read already)."""
    own = {_title(line) for line in offered}
    share = budget_tokens // max(len(shelves), 1)
    out: list[tuple[str, str]] = []
    for shelf in shelves:
        spent = 0
        for path, line in shelf.search(query, SHELF_HITS):
            if path in exclude or _title(line) in own:
                continue
            cost = estimate_tokens(line) + 1
            if spent + cost > share:
                break
            out.append((path, line))
            spent += cost
    return out


def _title(line: str) -> str:
    m = _TITLE.match(line)
    return " ".join(m.group(1).split()).casefold() if m else ""
