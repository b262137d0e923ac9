"""SWE-agent trajectories (``*.traj``): one JSON object.

What this relies on, as seen in SWE-agent's own test trajectories (old and 1.x):
``{"trajectory": [{"thought", "action", "observation", "response", "state"}, ...],
"history": [{"role", "content", "agent", "is_demo"?, "message_type"?}, ...],
"info": {"exit_status", "submission", "model_stats", ...}, "environment", ...}``.

- The task is the first non-demonstration ``user`` message of ``history``; the issue
  text between ``ISSUE:`` and ``INSTRUCTIONS:`` is kept, the instructions dropped.
  The ``system`` prompt and ``is_demo`` demonstrations are dropped.
- Each trajectory step is the agent's visible reasoning (``thought``), its command
  (``action``, condensed to its first line; ``edit`` commands name the open file from
  ``state``) and the command's output (``observation``, elided).
- ``info.submission`` is the patch the agent submitted: its files and a cut diff are
  kept, as the fix; ``info.exit_status`` says how the run ended.
"""

from __future__ import annotations

import json
import re
from typing import Any

from compiler.transcripts._model import ToolCall, Transcript, one_line

DIFF_LINES = 60
# SWE-agent's own file commands: their output is the file, not worth keeping
_QUIET_COMMANDS = {
    "open",
    "goto",
    "scroll_up",
    "scroll_down",
    "create",
    "find_file",
    "search_dir",
    "search_file",
    "str_replace_editor",
}
_EDIT_FAILED = re.compile(r"proposed edit has introduced|syntax error|edit failed", re.I)
_PROMPT_LINE = re.compile(r"^\(Open file: .*\)$|^\(Current directory: .*\)$|^bash-\$\s*$", re.M)


def looks_like(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and isinstance(data.get("trajectory"), list)
        and ("history" in data or "info" in data)
    )


def parse(data: dict[str, Any], name: str) -> Transcript:
    tr = Transcript(agent="swe-agent")
    task = _task(data.get("history") or [])
    if task:
        tr.add("user", task)
    for step in data.get("trajectory") or []:
        if not isinstance(step, dict):
            continue
        thought = str(step.get("thought") or "").strip()
        action = str(step.get("action") or "").strip()
        if thought:
            tr.add("assistant", thought)
        if action:
            observation = _PROMPT_LINE.sub("", str(step.get("observation") or "")).strip()
            call = _call(action, _state(step.get("state")), observation)
            call.result = observation
            tr.add("assistant", call)
    info = data.get("info") or {}
    if isinstance(info, dict):
        _outcome(tr, info)
    return tr


def _task(history: list[Any]) -> str:
    for message in history:
        if not isinstance(message, dict) or message.get("is_demo"):
            continue
        if message.get("role") != "user":
            continue
        text = _text(message.get("content"))
        m = re.search(r"ISSUE:\s*\n(.*?)(?:\n\s*INSTRUCTIONS:|\Z)", text, re.S)
        return (m.group(1) if m else text).replace("\r\n", "\n").strip()
    return ""


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(c.get("text") or "") for c in content if isinstance(c, dict))
    return str(content or "")


def _state(state: Any) -> dict[str, Any]:
    if isinstance(state, str):
        try:
            state = json.loads(state)
        except json.JSONDecodeError:
            return {}
    return state if isinstance(state, dict) else {}


def _call(action: str, state: dict[str, Any], observation: str) -> ToolCall:
    command, _, rest = action.partition(" ")
    workdir = str(state.get("working_dir") or "")
    if command == "edit":
        target = str(state.get("open_file") or "")
        if workdir and target.startswith(workdir.rstrip("/") + "/"):
            target = target[len(workdir.rstrip("/")) + 1 :]
        where = one_line(rest)
        summary = f"{target} {where}".strip() if target not in ("", "n/a") else where
        failed = bool(_EDIT_FAILED.search(observation))
        return ToolCall("edit", summary, is_error=failed, quiet=True)
    if command in _QUIET_COMMANDS:
        return ToolCall(command, one_line(rest), quiet=True)
    if command in ("submit", "exit_cost", "exit_context", "exit_forfeit"):
        return ToolCall(command, "")
    return ToolCall("Bash", one_line(action))


def _outcome(tr: Transcript, info: dict[str, Any]) -> None:
    status = str(info.get("exit_status") or "").strip()
    submission = str(info.get("submission") or "").replace("\r\n", "\n").strip()
    lines = []
    if status:
        lines.append(f"Run ended: {status}.")
    if submission:
        files = re.findall(r"^diff --git a/(\S+) b/", submission, re.M)
        if files:
            lines.append("Submitted a patch to " + ", ".join(dict.fromkeys(files)) + ":")
        diff = submission.splitlines()
        if len(diff) > DIFF_LINES:
            diff = diff[:DIFF_LINES] + [f"… ({len(diff) - DIFF_LINES} more lines)"]
        fence = "```"
        while fence in submission:
            fence += "`"
        lines.append(f"{fence}diff\n" + "\n".join(diff) + f"\n{fence}")
    if lines:
        tr.add("assistant", "\n\n".join(lines))
