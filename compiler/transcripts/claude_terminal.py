"""Claude Code sessions copied from the terminal as plain text (an export, or a capture).

What this relies on, as seen in real captures (Claude Code 0.2-1.0) and described for
newer versions:

- an optional welcome banner first: a box drawn with ``╭ │ ╰`` holding "Welcome to
  Claude Code" (newer: ``╭─── Claude Code vX.Y.Z ───╮``) and its ``cwd:``, then tips
  (`` ✔ ...``, `` ※ Tip: ...``);
- ``> `` at the start of a line opens a user request; its wrapped lines follow indented
  by two spaces (a line cut by the terminal ends with a space);
- ``⏺`` (newer: ``●``) opens an assistant block: text, or a tool call written
  ``Name(arguments)`` (``⏺ Bash(pytest -x)…``), or ``Read Todos``/``Update Todos``;
- ``  ⎿  `` opens a tool's output (more lines indented below it);
- ``✻ Thinking…`` opens the model's thinking (dropped, like the JSONL's);
- a ``=== Previous Conversation Compacted ===`` rule; the summary request after it
  becomes a short "Earlier in this session" note;
- anything else at the start of a line (the prompt box, cost totals) ends a block.
"""

from __future__ import annotations

import re

from compiler.transcripts._model import ToolCall, Transcript, one_line
from compiler.transcripts.claude_code import _QUIET_TOOLS, compact_note

ASSISTANT = ("⏺", "●")
_TOOL = re.compile(r"^([A-Z][\w.:-]*)\((.*)\)\s*…?\s*$", re.S)
_TODOS = re.compile(r"^(Read|Update) Todos\b")
_BANNER = re.compile(r"Welcome to Claude Code|╭─+ ?Claude Code v?\d")
_DATE = re.compile(r"\b(20\d\d-[01]\d-[0-3]\d)\b")
# a time stamp a program printed during the session (`gh run list`, CI logs, `date`)
_STAMP = re.compile(r"\b(20\d\d-[01]\d-[0-3]\d)[T ][0-2]\d:[0-5]\d")
_CONTINUED = "This session is being continued from a previous conversation"


def looks_like(text: str) -> bool:
    """A terminal capture: prompts and assistant blocks, with the banner or tool output."""
    head = text[:200_000]
    lines = head.splitlines()
    prompts = sum(1 for ln in lines if ln.startswith("> ") and len(ln) > 2)
    blocks = sum(1 for ln in lines if ln.startswith(ASSISTANT))
    if not prompts or not blocks:
        return False
    return bool(_BANNER.search(head[:4000])) or (blocks >= 2 and "⎿" in head)


def capture_date(text: str) -> str | None:
    """The session's day as the capture states it: a date near its top, else the first
    time stamp printed during the session. A date inside a command or a prose line
    (``git log --since=2024-04-17``) is no time stamp and is not taken."""
    if m := _DATE.search(text[:4000]):
        return m.group(1)
    if m := _STAMP.search(text):
        return m.group(1)
    return None


def _blocks(text: str) -> list[tuple[str, list[str]]]:
    """(kind, lines) in order: kind is user, assistant, output, thinking, compacted."""
    out: list[tuple[str, list[str]]] = []
    current: list[str] | None = None
    for raw in text.splitlines():
        line = raw.rstrip("\n")
        if line.startswith("> ") or line == ">":
            current = [line[2:]]
            out.append(("user", current))
        elif line.startswith(ASSISTANT):
            current = [line[1:].lstrip()]  # a trailing space is a terminal wrap
            out.append(("assistant", current))
        elif line.lstrip().startswith("⎿"):
            current = [line.lstrip()[1:].strip()]
            out.append(("output", current))
        elif line.startswith(("✻ Thinking", "✻ thinking")):
            current = []
            out.append(("thinking", current))
        elif "Previous Conversation Compacted" in line:
            current = None
            out.append(("compacted", []))
        elif line.startswith((" ", "\t")) or not line.strip():
            if current is not None and not line.lstrip().startswith(("│", "╭", "╰")):
                current.append(line)
        else:
            current = None  # the prompt box, totals, a banner: no part of the conversation
    return out


def _text(lines: list[str], indent: int = 2) -> str:
    """Lines of a block joined back: the indent removed, terminal wraps undone."""
    parts: list[str] = []
    for i, line in enumerate(lines):
        body = line[indent:] if i and line[:indent].strip() == "" else line
        if parts and parts[-1].endswith(" ") and body.strip():
            parts[-1] += body.strip()
        else:
            parts.append(body.rstrip() if not body.endswith(" ") else body)
    return "\n".join(p.rstrip() for p in parts).strip()


def parse(text: str, name: str) -> Transcript:
    tr = Transcript(agent="claude-code")
    tr.started_at = capture_date(text)
    call: ToolCall | None = None
    compacted = False
    for kind, lines in _blocks(text):
        if kind == "compacted":
            compacted = True
            continue
        if kind == "thinking":
            continue
        if kind == "output":
            if call is not None:
                result = _text(lines, 5)
                call.result = f"{call.result}\n{result}" if call.result else result
                call.is_error = call.is_error or result.startswith("Error")
            continue
        body = _text(lines)
        if kind == "user":
            call = None
            if not body or body.startswith("/") and " " not in body.strip():
                continue  # an empty prompt, or a bare slash command
            if compacted or body.startswith(_CONTINUED):
                tr.add("note", compact_note(body))
                compacted = False
            else:
                tr.add("user", body)
            continue
        first = body.split("\n", 1)[0]
        if m := _TOOL.match(body if "\n\n" not in body and len(body) < 1000 else first):
            name_, args = m.group(1), m.group(2)
            call = ToolCall(name_, one_line(args), quiet=name_ in _QUIET_TOOLS)
            tr.add("assistant", call)
        elif _TODOS.match(first):
            call = None  # the agent's to-do list: planning, not work done
        else:
            call = None
            tr.add("assistant", body)
    return tr


def title_of(tr: Transcript) -> str:
    """The first request, with the session's date when the capture has one."""
    from compiler.transcripts._model import shorten

    requests = tr.user_requests()
    if not requests:
        return ""
    title = shorten(requests[0], 70)
    return f"{title} ({tr.started_at})" if tr.started_at else title
