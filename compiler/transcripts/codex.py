"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``).

What this relies on: the ``RolloutLine`` / ``RolloutItem`` types of openai/codex
(``codex-rs/protocol/src/protocol.rs``, ``models.rs``), which every line serialises as
``{"timestamp", "type", "payload"}`` with ``type`` one of:

- ``session_meta``: ``payload.id``, ``timestamp``, ``cwd``, ``cli_version``,
  ``originator``, optional ``instructions`` and ``git``;
- ``response_item``: what the model saw and said, ``payload.type`` one of ``message``
  (``role`` user / assistant / developer / system, ``content`` blocks ``input_text`` /
  ``output_text`` / ``input_image``), ``reasoning`` (summary and encrypted content:
  dropped, it is speculation), ``function_call`` (``name``, ``arguments`` as a JSON
  string, ``call_id``), ``function_call_output`` (``call_id``, ``output`` as a string or
  ``{content, success}``), ``custom_tool_call`` / ``custom_tool_call_output`` (e.g.
  ``apply_patch`` with the patch as ``input``), ``local_shell_call``
  (``action.command``), ``web_search_call`` (``action.query``);
- ``event_msg``: the UI's echo of the same conversation (``user_message``,
  ``agent_message``, ``agent_reasoning``, ``token_count``, ...). Used only when a file
  has no ``response_item`` messages at all;
- ``turn_context``: cwd, model, policies (ignored);
- ``compacted``: ``payload.message``, the summary a compacted session continues from.

Older rollouts (2025 before the envelope) wrote a bare first line ``{"id",
"timestamp", "instructions"}`` and then bare response items (``{"type": "message",
...}``); those are read too. Injected context (``<environment_context>``,
``<user_instructions>``, ``AGENTS.md`` instructions) is dropped.
"""

from __future__ import annotations

import json
import re
from typing import Any

from compiler.transcripts._model import ToolCall, Transcript, one_line

ROLLOUT_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
ITEM_TYPES = {
    "message",
    "reasoning",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "web_search_call",
}
_INJECTED = re.compile(
    r"^\s*(?:<(?:environment_context|user_instructions|permissions instructions|"
    r"developer_instructions|user_shell_command|turn_aborted)\b|# AGENTS\.md instructions)",
    re.I,
)
_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$", re.M)


def looks_like(record: Any, first: bool = False) -> bool:
    if not isinstance(record, dict):
        return False
    if record.get("type") in ROLLOUT_TYPES and "payload" in record:
        return True
    if first and "id" in record and "timestamp" in record and "type" not in record:
        return True  # the legacy first line
    return record.get("type") in ITEM_TYPES and ("role" in record or "call_id" in record)


def parse(records: list[dict[str, Any]], name: str) -> Transcript:
    tr = Transcript(agent="codex")
    items: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    cwd = ""
    for r in records:
        kind, payload = r.get("type"), r.get("payload")
        if kind == "session_meta" and isinstance(payload, dict):
            tr.session_id = tr.session_id or payload.get("id")
            tr.started_at = tr.started_at or payload.get("timestamp") or r.get("timestamp")
            cwd = payload.get("cwd") or cwd
        elif kind == "response_item" and isinstance(payload, dict):
            items.append(payload)
        elif kind == "compacted" and isinstance(payload, dict):
            items.append({"type": "compacted", "message": payload.get("message")})
        elif kind == "event_msg" and isinstance(payload, dict):
            events.append(payload)
        elif kind in ITEM_TYPES:
            items.append(r)
        elif "id" in r and "timestamp" in r and kind is None:
            tr.session_id = tr.session_id or r.get("id")
            tr.started_at = tr.started_at or r.get("timestamp")
    if not any(i.get("type") == "message" for i in items):
        items = [_from_event(e) for e in events]
    calls: dict[str, ToolCall] = {}
    for item in items:
        _item(tr, item, calls, cwd)
    return tr


def _from_event(event: dict[str, Any]) -> dict[str, Any]:
    kind = event.get("type")
    if kind == "user_message":
        return {"type": "message", "role": "user", "content": str(event.get("message") or "")}
    if kind == "agent_message":
        return {"type": "message", "role": "assistant", "content": str(event.get("message") or "")}
    return {}


def _item(tr: Transcript, item: dict[str, Any], calls: dict[str, ToolCall], cwd: str) -> None:
    kind = item.get("type")
    if kind == "message":
        role = item.get("role")
        text = _content_text(item.get("content"))
        if role == "user":
            if not _INJECTED.match(text):
                tr.add("user", text)
        elif role == "assistant":
            tr.add("assistant", text)
        # developer and system messages are instructions, not conversation
    elif kind == "compacted" and item.get("message"):
        tr.add("note", "**Earlier in this session:**\n\n" + str(item["message"]).strip())
    elif kind in ("function_call", "custom_tool_call", "local_shell_call", "web_search_call"):
        call = _call(item, cwd)
        calls[str(item.get("call_id") or item.get("id") or len(calls))] = call
        tr.add("assistant", call)
    elif kind in ("function_call_output", "custom_tool_call_output"):
        call = calls.get(str(item.get("call_id")))
        if call is not None:
            call.result, call.is_error = _output(item.get("output"))


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") in ("input_text", "output_text", "text"):
            parts.append(str(block.get("text") or ""))
        elif block.get("type") == "input_image":
            parts.append("[image]")
    return "\n\n".join(p for p in parts if p.strip())


def _call(item: dict[str, Any], cwd: str) -> ToolCall:
    kind = item.get("type")
    if kind == "local_shell_call":
        action = item.get("action") or {}
        return ToolCall("Bash", _command(action.get("command")))
    if kind == "web_search_call":
        action = item.get("action") or {}
        return ToolCall("WebSearch", one_line(str(action.get("query") or action.get("url") or "")))
    name = str(item.get("name") or "tool")
    raw = item.get("arguments") if kind == "function_call" else item.get("input")
    if name == "apply_patch" or (
        isinstance(raw, str) and raw.lstrip().startswith("*** Begin Patch")
    ):
        return ToolCall("Edit", _patch_files(str(raw or ""), cwd))
    args: Any = raw
    if isinstance(raw, str):
        try:
            args = json.loads(raw)
        except json.JSONDecodeError:
            args = raw
    if isinstance(args, dict):
        command = args.get("command") if "command" in args else args.get("cmd")
        if command is not None:
            text = _command(command)
            if text.startswith("apply_patch"):
                return ToolCall("Edit", _patch_files(text, cwd))
            return ToolCall("Bash", text)
        for key in ("path", "file_path", "query", "url", "pattern"):
            if args.get(key):
                return ToolCall(name, one_line(str(args[key])))
        return ToolCall(name, one_line(json.dumps(args, ensure_ascii=False), 120))
    return ToolCall(name, one_line(str(args or "")))


def _command(command: Any) -> str:
    """The command a shell call ran: ``["bash", "-lc", "pytest -x"]`` -> ``pytest -x``."""
    if isinstance(command, list):
        parts = [str(c) for c in command]
        if (
            len(parts) >= 3
            and parts[0].endswith(("bash", "sh", "zsh"))
            and parts[1]
            in (
                "-lc",
                "-c",
            )
        ):
            return one_line(parts[2])
        return one_line(" ".join(parts))
    return one_line(str(command or ""))


def _patch_files(patch: str, cwd: str) -> str:
    files = []
    for _, path in _PATCH_FILE.findall(patch):
        path = path.strip()
        if cwd and path.startswith(cwd.rstrip("/") + "/"):
            path = path[len(cwd.rstrip("/")) + 1 :]
        files.append(path)
    return ", ".join(dict.fromkeys(files)) or one_line(patch)


def _output(output: Any) -> tuple[str, bool]:
    """(text, is_error) of a call's output, in its string, object or JSON-string forms."""
    if isinstance(output, dict):
        text = str(output.get("content") or output.get("output") or "")
        return _unwrap(text)[0], output.get("success") is False
    text = str(output or "")
    return _unwrap(text)


def _unwrap(text: str) -> tuple[str, bool]:
    """Shell outputs are often ``{"output": ..., "metadata": {"exit_code": n}}`` as JSON."""
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return text, False
        if isinstance(data, dict) and "output" in data:
            code = (data.get("metadata") or {}).get("exit_code")
            return str(data.get("output") or ""), isinstance(code, int) and code != 0
    return text, False
