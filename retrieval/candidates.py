"""Candidates: the catalog lines the model chooses pages from, within a token budget.

A small catalog is shown whole. A catalog larger than the selection budget is first
shortlisted lexically (SQLite FTS5 over titles, summaries, keys and whole bodies, see
wiki.search), so the prompt stays bounded whatever the wiki's size, and a fact that
sits only deep in a body still brings its page into view. The nearest peer put the
whole catalog into one prompt and, past about 218 articles, silently answered with no
context at all; here the budget is never exceeded and never silently ignored.

A large catalog is never parsed whole for a question: its size says it will not fit,
and the lines of the shortlisted articles come from a table kept beside the search
index (parsing a 10,000-article master index took most of a question's own time).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, closing
from dataclasses import dataclass, field

from wiki import KnowledgeBase, open_state
from wiki.indexing import catalog_lines, paths_by_slug

SHORTLIST_MAX = 200  # hits fetched from the index before the budget cut
# Characters per token by script, measured on catalog lines (bench/ask/tokens_per_script.py,
# docs/benchmarks-multihop.md). Latin, accented letters included: 3.77 (cl100k_base) and
# 3.49 (Qwen2.5) on HotpotQA lines, charged 3.3 for a margin. CJK: 0.69 (cl100k_base) and
# 1.09 (Qwen2.5, the embedded model, whose context is the tight one) on CMRC 2018 lines,
# charged 1.0: one token a character is what the measurement supports, so a Chinese
# catalog shows fewer lines than an English one because its lines carry more tokens.
# Other scripts (Cyrillic, Greek, Arabic, ...) are not measured here: one token each.
CHARS_PER_TOKEN = 3.3
CJK_CHARS_PER_TOKEN = 1.0
OTHER_CHARS_PER_TOKEN = 1.0
_PAST_LATIN = re.compile("[^\u0000-\u024f]+")
_COUNT = re.compile(r"^(\d+) articles?\.$", re.M)
_CJK = re.compile(
    "[\u1100-\u11ff\u3000-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0003134f]"
)


def script_chars(text: str) -> dict[str, int]:
    """How many characters of ``text`` are Latin (ASCII and Latin letters), CJK, other."""
    if text.isascii():
        return {"latin": len(text), "cjk": 0, "other": 0}
    cjk = len(_CJK.findall(text))
    latin = len(text) - sum(map(len, _PAST_LATIN.findall(text)))  # each char < U+0250
    return {"latin": latin, "cjk": cjk, "other": len(text) - latin - cjk}


def estimate_tokens(text: str) -> int:
    """A conservative token count from the characters of each script (see the ratios)."""
    chars = script_chars(text)
    tokens = (
        chars["latin"] / CHARS_PER_TOKEN
        + chars["cjk"] / CJK_CHARS_PER_TOKEN
        + chars["other"] / OTHER_CHARS_PER_TOKEN
    )
    return int(tokens + 0.999)


def _parse_lines(text: str) -> dict[str, str]:
    lines: dict[str, str] = {}
    for line in text.splitlines():
        if not line.startswith("- ["):
            continue
        start = line.find("](wiki/")
        end = line.find(".md)", start)
        if start >= 0 and end >= 0:
            lines[line[start + 2 : end + 3]] = line
    return lines


@dataclass
class Catalog:
    """The master index as a question needs it."""

    kb: KnowledgeBase
    total: int
    lines: dict[str, str] | None  # path -> line, when the catalog is small enough to read whole
    text_tokens: int  # estimated tokens of the whole catalog
    # state.db, where a large catalog's lines are looked up: a connection of its own for
    # each look-up, unless the question shares one (retrieval/connection.py)
    connect: Callable[[], AbstractContextManager[sqlite3.Connection]] | None = field(
        default=None, repr=False, compare=False
    )

    @classmethod
    def load(
        cls,
        kb: KnowledgeBase,
        budget_tokens: int | None = None,
        connect: Callable[[], AbstractContextManager[sqlite3.Connection]] | None = None,
    ) -> Catalog:
        """Read the catalog whole if it may fit ``budget_tokens``; else only its size."""
        path = kb.master_index_path
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            return cls(kb, 0, {}, 0, connect)
        if budget_tokens is None or size <= budget_tokens * 4:
            text = path.read_text(encoding="utf-8")
            lines = _parse_lines(text)
            return cls(kb, len(lines), lines, estimate_tokens(text) if lines else 0, connect)
        with path.open(encoding="utf-8", errors="replace") as f:
            head = f.read(2048)
        m = _COUNT.search(head)  # a hand-edited header has no count: count the lines
        total = int(m.group(1)) if m is not None else path.read_bytes().count(b"\n- [")
        return cls(kb, total, None, int(size / CHARS_PER_TOKEN), connect)

    def _state(self) -> AbstractContextManager[sqlite3.Connection]:
        return self.connect() if self.connect else closing(open_state(self.kb))

    def __len__(self) -> int:
        return self.total

    def sample(self, chars: int = 64_000) -> list[str]:
        """Catalog lines from across the catalog, about ``chars`` of them: a large one is
        read in eight pieces spread over the file, never whole."""
        if self.lines is not None:
            out, used = [], 0
            step = max(len(self.lines) * 200 // max(chars, 1), 1)  # ~200 chars a line
            for line in list(self.lines.values())[::step]:
                out.append(line)
                used += len(line)
                if used >= chars:
                    break
            return out
        out = []
        with self.kb.master_index_path.open("rb") as f:
            size = f.seek(0, 2)
            for i in range(8):
                f.seek(size * i // 8)
                piece = f.read(chars // 8).decode("utf-8", errors="replace")
                out += [line for line in piece.splitlines()[1:-1] if line.startswith("- [")]
        return list(dict.fromkeys(out))  # pieces of a small file overlap

    def lookup(self, paths: Sequence[str]) -> dict[str, str]:
        """The lines of those ``paths`` that are articles of the catalog."""
        if self.lines is not None:
            return {p: self.lines[p] for p in paths if p in self.lines}
        with self._state() as conn:
            return catalog_lines(conn, paths)

    def resolve(self, paths: Sequence[str], slugs: Sequence[str]) -> list[str]:
        """Article paths for link targets given as paths or as slugs, in order, deduplicated."""
        if self.lines is not None:
            by_slug: dict[str, str] = {}
            for p in self.lines:
                by_slug.setdefault(p.rsplit("/", 1)[-1][:-3], p)
            found = [p for p in paths if p in self.lines] + [
                by_slug[s] for s in slugs if s in by_slug
            ]
        else:
            with self._state() as conn:
                known = catalog_lines(conn, paths)
                by_slug = paths_by_slug(conn, slugs)
            found = [p for p in paths if p in known] + [by_slug[s] for s in slugs if s in by_slug]
        return list(dict.fromkeys(found))


@dataclass(frozen=True)
class Candidates:
    lines: list[str]
    paths: list[str]
    shortlisted: bool
    total: int


def pick_candidates(
    catalog: Catalog,
    question: str,
    budget_tokens: int,
    search: Callable[[str, int], list[str]],
    exclude: set[str] | frozenset[str] = frozenset(),
) -> Candidates:
    """Catalog lines for the selection prompt, never more than budget_tokens of them,
    none of the ``exclude`` paths (pages already read).

    ``search(question, limit)`` returns article paths best first; it is only called
    when the catalog does not fit the budget."""
    total = len(catalog)
    if catalog.lines is not None and catalog.text_tokens <= budget_tokens:
        paths = [p for p in catalog.lines if p not in exclude]
        return Candidates([catalog.lines[p] for p in paths], paths, False, total)
    hits = [p for p in search(question, SHORTLIST_MAX + len(exclude)) if p not in exclude]
    found = catalog.lookup(hits)
    lines, paths, used = [], [], 0
    for path in hits:
        line = found.get(path)
        if line is None:  # indexed but no longer in the catalog
            continue
        cost = estimate_tokens(line) + 1
        if used + cost > budget_tokens:
            break
        lines.append(line)
        paths.append(path)
        used += cost
    return Candidates(lines, paths, True, total)
