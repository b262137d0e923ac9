"""Candidates: the catalog lines the model chooses pages from, within a token budget.

A small catalog is shown whole. A catalog larger than the selection budget is first
shortlisted lexically (SQLite FTS5 over titles, summaries, keys and whole bodies, see
wiki.search), so the prompt stays bounded whatever the wiki's size, and a fact that
sits only deep in a body still brings its page into view. The nearest peer put the
whole catalog into one prompt and, past about 218 articles, silently answered with no
context at all; here the budget is never exceeded and never silently ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from wiki import KnowledgeBase

SHORTLIST_MAX = 200  # hits fetched from the index before the budget cut


def estimate_tokens(text: str) -> int:
    """A conservative token count: ~4 characters per token for ASCII, 1 per other character
    (CJK text runs close to one token per character)."""
    ascii_chars = len(text) if text.isascii() else len(text.encode("ascii", "ignore"))
    return (ascii_chars + 3) // 4 + (len(text) - ascii_chars)


@dataclass(frozen=True)
class Catalog:
    """The master index as lines by path, read without parsing every field."""

    lines: dict[str, str]  # path -> the master index line, as the model will read it
    text_tokens: int

    @classmethod
    def load(cls, kb: KnowledgeBase) -> Catalog:
        try:
            text = kb.master_index_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return cls({}, 0)
        lines: dict[str, str] = {}
        size = 0
        for line in text.splitlines():
            if not line.startswith("- ["):
                continue
            start = line.find("](wiki/")
            end = line.find(".md)", start)
            if start < 0 or end < 0:
                continue
            lines[line[start + 2 : end + 3]] = line
            size += len(line) + 1
        return cls(lines, estimate_tokens(text) if size else 0)

    def __len__(self) -> int:
        return len(self.lines)


@dataclass(frozen=True)
class Candidates:
    lines: list[str]
    paths: list[str]
    shortlisted: bool
    total: int


def pick_candidates(
    catalog: Catalog, question: str, budget_tokens: int, search: Callable[[str, int], list[str]]
) -> Candidates:
    """Catalog lines for the selection prompt, never more than budget_tokens of them.

    ``search(question, limit)`` returns article paths best first; it is only called
    when the catalog does not fit the budget."""
    total = len(catalog)
    if catalog.text_tokens <= budget_tokens:
        paths = list(catalog.lines)
        return Candidates([catalog.lines[p] for p in paths], paths, False, total)
    lines, paths, used = [], [], 0
    for path in search(question, SHORTLIST_MAX):
        line = catalog.lines.get(path)
        if line is None:  # indexed but no longer in the catalog
            continue
        cost = estimate_tokens(line) + 1
        if used + cost > budget_tokens:
            break
        lines.append(line)
        paths.append(path)
        used += cost
    return Candidates(lines, paths, True, total)
