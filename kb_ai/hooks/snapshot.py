"""The session-start snapshot: what the project has learned, in at most 5 lines and 1 KB.

Up to four articles, ranked: pitfalls, conventions, decisions (each most recently
changed first), then the most recently changed of the rest; and always, last, one line
saying how to ask the wiki (the `ask` tool of the kb-ai MCP server, or the CLI). Empty
only while the wiki has no article. It is computed once per session and kept, so every
call in that session gets the same bytes and the agent's prompt cache stays valid.

Run by the hook on every session start: it reads the master index and the article
files' times directly and imports nothing of the wiki package (whose imports alone take
longer than this whole step). The layout names below are the wiki's (wiki/layout.py).
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

MAX_LINES = 5
MAX_BYTES = 1024
LINE_CHARS = 200
RANKED_KINDS = ("pitfall", "convention", "decision")
MASTER_INDEX = Path("index") / "master-index.md"
STATE_DIR = ".kb-ai"
_LINE = re.compile(
    r"^- \[(?P<title>.+?)\]\((?P<path>wiki/(?P<type>[^/]+)/[^)]+\.md)\)(?: — (?P<summary>.*?))?(?: \| keys: .*)?$"
)


def ask_line(root: Path) -> str:
    return (
        "kb-ai: ask this project's wiki before guessing how things are done here: the `ask` "
        f"tool of the kb-ai MCP server, or `kb-ai --kb {shlex.quote(str(root))} ask "
        '"your question"` in a shell.'
    )


def _entries(root: Path) -> list[tuple[int, float, str, str, str]]:
    """(rank, -mtime, kind, title, summary) of every article in the master index."""
    try:
        text = (root / MASTER_INDEX).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    found = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if m is None:
            continue
        try:
            mtime = os.stat(root / m["path"]).st_mtime
        except OSError:
            continue
        kind = m["type"]
        rank = RANKED_KINDS.index(kind) if kind in RANKED_KINDS else len(RANKED_KINDS)
        title = m["title"].replace("\\[", "[").replace("\\]", "]")
        summary = (m["summary"] or "").replace("\\|", "|")
        found.append((rank, -mtime, kind, title, summary))
    found.sort(key=lambda e: (e[0], e[1], e[3]))
    return found


def build_snapshot(root: Path) -> str:
    """The snapshot text of the KB at ``root`` ("" while its wiki has no article)."""
    entries = _entries(root)
    if not entries:
        return ""
    last = ask_line(root)
    size = len(last.encode())
    lines: list[str] = []
    for _, _, kind, title, summary in entries:
        if len(lines) >= MAX_LINES - 1:
            break
        line = f"- {kind}: {title}" + (f" — {summary}" if summary else "")
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
