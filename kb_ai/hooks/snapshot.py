"""The session-start snapshot: what the project has learned, in at most 5 lines and 1 KB.

Up to four lines, ranked: first the lessons agent sessions taught (kb_ai/lessons.py)
that a person approved, then the active ones (confidence at or above the threshold),
each surest first, then the most recently seen; then articles: pitfalls, conventions,
decisions (each most recently changed first), then the most recently changed of the
rest. An article that holds lessons is left to them: one whose lessons are rejected,
deprecated or waiting for approval is not shown, nor one a lesson line already shows;
one with a lesson seen only once (not yet active) is shown as before. Always, last, one
line saying how to ask the wiki (the `ask` tool of the kb-ai MCP server, or the CLI).
Empty only while the wiki has no article and no lesson is shown. It is computed once
per session and kept, so every call in that session gets the same bytes and the
agent's prompt cache stays valid.

Run by the hook on every session start: it reads the master index, the article files'
times and lessons/ directly and imports nothing of the wiki package (whose imports
alone take longer than this whole step). The layout names below are the wiki's
(wiki/layout.py).
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from kb_ai.hooks.catalog import index_lines, shelves

if TYPE_CHECKING:  # imported where used: the capture hook, which imports this, needs none
    from datetime import date

    from kb_ai.lessons import Rules

MAX_LINES = 5
MAX_BYTES = 1024
LINE_CHARS = 200
RANKED_KINDS = ("pitfall", "convention", "decision")
STATE_DIR = ".kb-ai"


def ask_line(root: Path) -> str:
    return (
        "kb-ai: ask this project's wiki before guessing how things are done here: the `ask` "
        f"tool of the kb-ai MCP server, or `kb-ai --kb {shlex.quote(str(root))} ask "
        '"your question"` in a shell.'
    )


def _entries(root: Path, shelf: int = 0) -> list[tuple[int, int, float, str, str, str, str]]:
    """(rank, shelf, -mtime, kind, title, summary, path) of every article in the master
    index of the knowledge base at ``root`` (shelf 0: the project's own)."""
    found = []
    for path, kind, title, summary in index_lines(root):
        try:
            mtime = os.stat(root / path).st_mtime
        except OSError:
            continue
        rank = RANKED_KINDS.index(kind) if kind in RANKED_KINDS else len(RANKED_KINDS)
        found.append((rank, shelf, -mtime, kind, title, summary, path))
    return found


def _all_entries(root: Path, homes: set[str]) -> list[tuple[str, str, str]]:
    """(kind, title, summary) of the lines to offer, best first: this knowledge base's
    articles (less those whose lessons speak for them) and those of the ``also`` ones,
    ranked by kind, the project's first within a kind; a title the project has too is
    its own (the project wins a tie). A shelf's kind says which knowledge base it is."""
    own = [e for e in _entries(root) if e[6] not in homes]
    titles = {e[4].casefold() for e in own}
    names = {}
    found = list(own)
    for n, (name, shelf_root) in enumerate(shelves(root), start=1):
        names[n] = name
        found += [e for e in _entries(shelf_root, n) if e[4].casefold() not in titles]
    found.sort(key=lambda e: (e[0], e[1], e[2], e[4]))
    return [(f"{e[3]} ({names[e[1]]})" if e[1] else e[3], e[4], e[5]) for e in found]


def _rules(root: Path) -> Rules:
    from kb_ai.errors import KbAiError
    from kb_ai.lessons import Rules
    from kb_ai.settings import load_settings

    try:
        return Rules.of(load_settings(root))
    except KbAiError:  # a kb-ai.toml with a mistake: the lessons still rank by the defaults
        return Rules.defaults()


def _lessons(root: Path, today: date | None) -> tuple[list[str], set[str]]:
    """(the lesson lines the snapshot may show, best first; the articles to leave out)."""
    from datetime import UTC, datetime

    from kb_ai.lessons import ranked, read_lessons, standing

    lessons = read_lessons(root)
    if not lessons:
        return [], set()
    rules = _rules(root)
    today = today or datetime.now(UTC).date()
    standings = [standing(lesson, rules, today) for lesson in lessons]
    homes = {a for s in standings for a in s.lesson.articles}
    homes -= {a for s in standings if s.state == "new" for a in s.lesson.articles}
    lines = []
    for s in ranked(standings):
        n = s.lesson.seen
        how = "approved" if s.state == "approved" else f"confidence {s.confidence:.2f}"
        seen = f"seen in {n} session{'s' if n != 1 else ''}"
        lines.append(f"- {s.lesson.kind} ({how}, {seen}): {s.lesson.text}")
    return lines, homes


def build_snapshot(root: Path, *, today: date | None = None) -> str:
    """The snapshot text of the KB at ``root`` ("" while it has nothing to show);
    ``today`` is the day lessons are judged on (their confidence fades while unseen)."""
    lesson_lines, homes = _lessons(root, today)
    entries = _all_entries(root, homes)
    if not entries and not lesson_lines:
        return ""
    last = ask_line(root)
    size = len(last.encode())
    lines: list[str] = []
    candidates = lesson_lines + [
        f"- {kind}: {title}" + (f" — {summary}" if summary else "")
        for kind, title, summary in entries
    ]
    for line in candidates:
        if len(lines) >= MAX_LINES - 1:
            break
        line = " ".join(line.split())
        line = line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"
        cost = len(line.encode()) + 1
        if size + cost > MAX_BYTES:
            break
        lines.append(line)
        size += cost
    return "\n".join([*lines, last])


def session_snapshot(root: Path, session_id: str) -> str:
    """The snapshot of one session: built on its first call, then read back byte for byte."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", session_id)[:100] or "no-session"
    path = root / STATE_DIR / "snapshots" / f"{safe}.txt"
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        pass
    text = build_snapshot(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)  # two starts of one session both write the same bytes
    return text
