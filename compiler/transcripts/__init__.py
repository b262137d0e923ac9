"""Coding-agent and chat transcripts: recognise one by its content, normalise it.

``detect(data, name)`` names the format of a file's content (or of its first bytes,
so a directory walk can decide cheaply), or None when it is not a transcript.
``parse(data, name)`` turns it into a Transcript whose ``to_text()`` is readable
Markdown: who asked what, what the agent concluded and did (one line per tool call),
errors kept, long tool output elided, thinking and injected instructions dropped,
secrets and ``<private>`` spans removed.

Formats (each module's docstring says what it relies on):

    claude-code     Claude Code session JSONL
    claude-code-terminal  a Claude Code session copied from the terminal (plain text)
    codex           Codex CLI rollout JSONL
    swe-agent       SWE-agent .traj JSON
    chat-json       a JSON list of {role, content} messages
    chat-markdown   a Markdown chat log (**User:** / ## Assistant / User: ...)
"""

from __future__ import annotations

import json
import re
from pathlib import PurePath
from typing import Any

from compiler.transcripts import chat, claude_code, claude_terminal, codex, swe_agent
from compiler.transcripts._model import AGENT_NAMES, ToolCall, Transcript, Turn

__all__ = ["FORMATS", "TranscriptError", "ToolCall", "Transcript", "Turn", "detect", "parse"]

FORMATS = (
    "claude-code",
    "claude-code-terminal",
    "codex",
    "swe-agent",
    "chat-json",
    "chat-markdown",
)
HEAD_BYTES = 64 * 1024  # what discovery reads of a file to recognise it
_JSONL_PROBE = 20  # complete lines looked at to recognise a JSONL format


class TranscriptError(ValueError):
    """The content was recognised as a transcript but cannot be read as one."""


def detect(data: bytes | str, name: str = "") -> str | None:
    """The transcript format of ``data`` (whole or only its head), or None.

    Decided by content. The name only breaks a tie: a Markdown chat log is looked for in
    text files, not in JSON.
    """
    text = _as_text(data)
    stripped = text.lstrip()
    if not stripped:
        return None
    if stripped[0] in "{[":
        return _detect_json(stripped)
    suffix = PurePath(name).suffix.lower()
    if suffix in (".json", ".jsonl", ".traj"):
        return None
    if claude_terminal.looks_like(text[:HEAD_BYTES]):
        return "claude-code-terminal"
    return "chat-markdown" if chat.looks_like_markdown(text[:HEAD_BYTES]) else None


def _detect_json(text: str) -> str | None:
    try:
        whole: Any = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if whole is not None:
        if swe_agent.looks_like(whole):
            return "swe-agent"
        if chat.looks_like_json(whole):
            return "chat-json"
        if isinstance(whole, dict):  # a single JSON object: maybe a one-line JSONL
            return _detect_jsonl([whole])
        return None
    records = _records(text, limit=_JSONL_PROBE, partial=True)
    if records:
        return _detect_jsonl(records)
    # a single large JSON document cut off by the head: recognise it by its opening
    opening = text[:4096]
    claude_type = re.search(r'"type"\s*:\s*"(?:user|assistant|summary)"', opening)
    if opening.startswith("{") and re.search(r'"sessionId"\s*:', opening) and claude_type:
        return "claude-code"
    if opening.startswith("{") and re.search(r'"type"\s*:\s*"session_meta"', opening):
        return "codex"
    if opening.startswith("{") and '"trajectory"' in text and '"action"' in text:
        return "swe-agent"
    if opening.startswith("[") and '"role"' in opening and '"content"' in opening:
        return "chat-json"
    return None


def _detect_jsonl(records: list[Any]) -> str | None:
    if all(claude_code.looks_like(r) for r in records):
        return "claude-code"
    codex_shaped = codex.looks_like(records[0], first=True) and all(
        codex.looks_like(r) for r in records[1:]
    )
    if codex_shaped and any(
        isinstance(r, dict) and ("payload" in r or "role" in r) for r in records
    ):
        return "codex"
    return None


def parse(
    data: bytes | str, name: str = "", *, fmt: str | None = None, file_date: str | None = None
) -> Transcript:
    """Read a transcript (raises TranscriptError when it is not one); ``fmt``: its format,
    when ``detect`` named it already (each datum is detected once).

    ``file_date`` (ISO, the file's modification day) dates a terminal capture that
    states no date of its own, in its text or in its file name (as compiler/dating.py
    dates any source): the title names the session by its first request and that day."""
    text = _as_text(data)
    fmt = fmt or detect(text, name)
    stem = PurePath(name).stem or "session"
    if fmt == "claude-code":
        tr = claude_code.parse(_records(text), name)
    elif fmt == "claude-code-terminal":
        tr = claude_terminal.parse(text, name)
        tr.started_at = tr.started_at or _name_date(name) or file_date
        tr.title = claude_terminal.title_of(tr)
    elif fmt == "codex":
        tr = codex.parse(_records(text), name)
    elif fmt == "swe-agent":
        tr = swe_agent.parse(json.loads(text), name)
    elif fmt == "chat-json":
        tr = chat.parse_json(json.loads(text), name)
    elif fmt == "chat-markdown":
        tr = chat.parse_markdown(text, name)
    else:
        raise TranscriptError(f"{name or 'this content'}: not a transcript kb-ai can read")
    return tr.finish(fallback_title=f"{_agent_title(tr.agent)} session {stem[:8]}")


def _name_date(name: str) -> str | None:
    m = re.search(r"(?<!\d)(20\d\d-[01]\d-[0-3]\d)(?!\d)", PurePath(name).name)
    return m.group(1) if m else None


def _agent_title(agent: str) -> str:
    name = AGENT_NAMES.get(agent, agent)
    return name[:1].upper() + name[1:]


def _records(text: str, *, limit: int | None = None, partial: bool = False) -> list[Any]:
    """JSON records of a JSONL text; with ``partial``, a cut-off last line is skipped and
    anything else that does not parse means "not JSONL" (an empty list)."""
    out: list[Any] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        line = line.strip()
        if not line:
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            if partial and i == len(lines) - 1:
                break
            if partial:
                return []
            continue  # a damaged line in a long session costs that line only
        if limit is not None and len(out) >= limit:
            break
    return out


def _as_text(data: bytes | str) -> str:
    if isinstance(data, bytes):
        data = data.decode("utf-8", errors="replace")
    return data.removeprefix("\ufeff")
