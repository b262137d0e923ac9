"""The session-start snapshot: what the project has learned, in at most 5 lines and 1 KB.

It lists the pitfalls and conventions of the wiki (most recently changed first), plus one
line saying the `ask` MCP tool exists. It is computed once per session and kept, so every
call in that session gets the same bytes and the agent's prompt cache stays valid.
"""

from __future__ import annotations

import re
from pathlib import Path

from wiki import KnowledgeBase, atomic_write_text

MAX_LINES = 5
MAX_BYTES = 1024
KINDS = ("pitfall", "convention")
ASK_LINE = (
    "kb-ai: this project has a wiki of its decisions, conventions and pitfalls; "
    "call the `ask` MCP tool (server kb) before guessing how things are done here."
)
_LINE = re.compile(
    r"^- \[(?P<title>.+?)\]\((?P<path>wiki/(?P<type>[^/]+)/[^)]+\.md)\)(?: — (?P<summary>.*?))?(?: \| keys: .*)?$"
)


def _entries(kb: KnowledgeBase) -> list[tuple[float, str, str, str]]:
    try:
        text = kb.master_index_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    found = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if m is None or m["type"] not in KINDS:
            continue
        try:
            mtime = (kb.root / m["path"]).stat().st_mtime
        except OSError:
            continue
        title = m["title"].replace("\\[", "[").replace("\\]", "]")
        summary = (m["summary"] or "").replace("\\|", "|")
        found.append((mtime, m["type"], title, summary))
    found.sort(key=lambda e: (-e[0], e[2]))
    return found


def build_snapshot(kb: KnowledgeBase) -> str:
    """The snapshot text ("" when the wiki has no pitfalls or conventions yet)."""
    lines: list[str] = []
    size = len(ASK_LINE.encode()) + 1
    for _, kind, title, summary in _entries(kb):
        if len(lines) >= MAX_LINES - 1:
            break
        line = f"- {kind}: {title}" + (f" — {summary}" if summary else "")
        line = line if len(line) <= 240 else line[:239] + "…"
        cost = len(line.encode()) + 1
        if size + cost > MAX_BYTES:
            break
        lines.append(line)
        size += cost
    if not lines:
        return ""
    return "\n".join([ASK_LINE, *lines])


def session_snapshot(kb: KnowledgeBase, session_id: str) -> str:
    """The snapshot of one session: built on its first call, then read back byte for byte."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", session_id)[:100] or "no-session"
    path: Path = kb.state_dir / "snapshots" / f"{safe}.txt"
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        pass
    text = build_snapshot(kb)
    atomic_write_text(path, text)
    return text
