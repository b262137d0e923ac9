"""Plain chat logs: a JSON list of ``{role, content}`` messages, and Markdown chat logs.

JSON: the OpenAI / Anthropic message-list shape, bare or as ``{"messages": [...]}``.
``content`` is a string or a list of ``{"type": "text", "text"}`` blocks; assistant
``tool_calls`` (``function.name``, ``function.arguments``) and ``role: "tool"``
results are condensed like any agent's; ``system`` / ``developer`` messages are
instructions and dropped.

Markdown: turns introduced by a speaker marker at the start of a line, in any of the
usual spellings: ``**User:**``, ``## User``, ``User:``, ``> **Assistant**:`` (speakers:
user, human, me, you / assistant, ai, bot, model, agent, claude, chatgpt, gpt, codex,
copilot, gemini). A log needs markers of both sides to count as one.
"""

from __future__ import annotations

import json
import re
from typing import Any

from compiler.transcripts._model import ToolCall, Transcript, one_line, shorten

USER_ROLES = {"user", "human"}
ASSISTANT_ROLES = {"assistant", "ai", "model", "bot", "gpt", "chatbot"}
DROPPED_ROLES = {"system", "developer"}
TOOL_ROLES = {"tool", "function", "tool_result"}

_USER_NAMES = r"user|human|me|you"
_ASSISTANT_NAMES = (
    r"assistant|ai|bot|model|agent|claude|chatgpt|gpt(?:-[\w.]+)?|codex|copilot|gemini"
)
MARKER = re.compile(
    r"^(?:>\s*)?(?:#{1,4}\s*)?(?:\*\*|__)?\s*(?P<who>" + _USER_NAMES + "|" + _ASSISTANT_NAMES + r")"
    r"\s*(?::\s*(?:\*\*|__)|(?:\*\*|__)\s*:|:|(?:\*\*|__)\s*$|$)[ \t]*",
    re.I | re.M,
)
_USER = re.compile(r"^(?:" + _USER_NAMES + r")$", re.I)
CODE_BLOCK_LINES = 40


# -- JSON ------------------------------------------------------------------------------


def messages_of(data: Any) -> list[Any] | None:
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        data = data["messages"]
    return data if isinstance(data, list) else None


def looks_like_json(data: Any) -> bool:
    messages = messages_of(data)
    if not messages:
        return False
    roles = set()
    for m in messages:
        if not isinstance(m, dict) or "role" not in m or not ("content" in m or "tool_calls" in m):
            return False
        roles.add(str(m["role"]).lower())
    return (
        bool(roles & USER_ROLES)
        and roles <= USER_ROLES | ASSISTANT_ROLES | DROPPED_ROLES | TOOL_ROLES
    )


def parse_json(data: Any, name: str) -> Transcript:
    tr = Transcript(agent="chat")
    calls: dict[str, ToolCall] = {}
    last: ToolCall | None = None
    for m in messages_of(data) or []:
        role = str(m.get("role") or "").lower()
        text = _text(m.get("content"))
        if role in USER_ROLES:
            tr.add("user", text)
        elif role in ASSISTANT_ROLES:
            tr.add("assistant", text)
            for tc in m.get("tool_calls") or []:
                if isinstance(tc, dict):
                    last = _tool_call(tc)
                    calls[str(tc.get("id") or len(calls))] = last
                    tr.add("assistant", last)
        elif role in TOOL_ROLES:
            call = calls.get(str(m.get("tool_call_id"))) or last
            if call is not None and call.result is None:
                call.result = text
    return tr


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") in (
                "text",
                "input_text",
                "output_text",
            ):
                parts.append(str(block.get("text") or ""))
        return "\n\n".join(parts)
    return ""


def _tool_call(tc: dict[str, Any]) -> ToolCall:
    fn = tc.get("function") if isinstance(tc.get("function"), dict) else tc
    name = str(fn.get("name") or "tool")
    args: Any = fn.get("arguments") or fn.get("input") or ""
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            return ToolCall(name, one_line(args))
    if isinstance(args, dict):
        for key in ("command", "cmd", "file_path", "path", "query", "url", "pattern"):
            if args.get(key):
                value = args[key]
                value = " ".join(map(str, value)) if isinstance(value, list) else str(value)
                return ToolCall(name, one_line(value))
        return ToolCall(name, one_line(json.dumps(args, ensure_ascii=False), 120))
    return ToolCall(name, one_line(str(args)))


# -- Markdown --------------------------------------------------------------------------


def looks_like_markdown(text: str) -> bool:
    """Speaker markers of both sides, at least two turns, starting within the log's head."""
    markers = _markers(text)
    if len(markers) < 2:
        return False
    users = sum(1 for m in markers if _USER.match(m.group("who")))
    if not users or users == len(markers):
        return False
    first_line = text[: markers[0].start()].count("\n")
    return first_line < 30


def _markers(text: str) -> list[re.Match[str]]:
    """Speaker markers outside fenced code blocks (a YAML ``user:`` key is not a turn)."""
    fences = [m.start() for m in re.finditer(r"^(?:```|~~~)", text, re.M)]
    spans = list(zip(fences[::2], [*fences[1::2], len(text)], strict=False))
    return [
        m
        for m in MARKER.finditer(text)
        if _is_marker(m, text) and not any(a < m.start() < b for a, b in spans)
    ]


def _is_marker(m: re.Match[str], text: str) -> bool:
    """A marker is the speaker alone (``## User``, ``**User:**``) or followed by a colon;
    a bare word starting a sentence (``You can ...``) is not one."""
    raw = m.group(0)
    line_end = text.find("\n", m.end())
    rest = text[m.end() : line_end if line_end >= 0 else len(text)]
    return ":" in raw or "#" in raw or ("**" in raw or "__" in raw) and not rest.strip()


def parse_markdown(text: str, name: str) -> Transcript:
    tr = Transcript(agent="chat")
    markers = _markers(text)
    preamble = text[: markers[0].start()] if markers else ""
    heading = re.search(r"^#{1,3}\s+(.+?)\s*#*\s*$", preamble, re.M)
    if heading:  # the log's own title says more than its first request
        tr.title = shorten(heading.group(1), 100)
        preamble = preamble.replace(heading.group(0), "", 1)
    if preamble.strip():
        tr.add("note", preamble.strip())
    for i, m in enumerate(markers):
        end = markers[i + 1].start() if i + 1 < len(markers) else len(text)
        body = _cut_code_blocks(text[m.end() : end].strip())
        tr.add("user" if _USER.match(m.group("who")) else "assistant", body)
    return tr


def _cut_code_blocks(text: str) -> str:
    def cut(block: re.Match[str]) -> str:
        lines = block.group(0).splitlines()
        if len(lines) <= CODE_BLOCK_LINES + 2:
            return block.group(0)
        kept = lines[: CODE_BLOCK_LINES // 2]
        return "\n".join([*kept, f"… ({len(lines) - len(kept) - 1} lines elided)", lines[-1]])

    return re.sub(r"^```.*?^```[ \t]*$", cut, text, flags=re.S | re.M)
