"""Installing kb-ai's hooks into an agent's own settings file, without clobbering it.

Claude Code reads ``.claude/settings.json`` (project) or ``~/.claude/settings.json``
(global); Codex reads ``.codex/hooks.json`` or ``~/.codex/hooks.json``. Both nest hooks
as event -> matcher groups -> command handlers. kb-ai's entries are recognised by their
command (``... kb-ai ... hook <name>``), so install is idempotent and uninstall removes
exactly what install added, leaving everything else as it was.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

from kb_ai.errors import UsageError
from wiki import atomic_write_text

AGENTS = ("claude-code", "codex")
# event -> hook command, per agent. Codex has no session-end event: its Stop runs after
# every turn, and the queue keeps only the newest transcript of a session waiting.
EVENTS: dict[str, dict[str, str]] = {
    "claude-code": {
        "SessionStart": "session-start",
        "SessionEnd": "session-end",
        "PreCompact": "session-end",
    },
    "codex": {"SessionStart": "session-start", "Stop": "session-end", "PreCompact": "session-end"},
}
PROMPT_EVENT = "UserPromptSubmit"
TIMEOUT_SECONDS = 5


def settings_path(agent: str, project: Path | None) -> Path:
    if agent not in AGENTS:
        raise UsageError(f"Unknown agent {agent!r}", hint=f"use one of: {', '.join(AGENTS)}")
    base = project if project is not None else Path.home()
    return base / (".claude/settings.json" if agent == "claude-code" else ".codex/hooks.json")


def kb_ai_command() -> str:
    """How the agent should start kb-ai, by absolute path: the console script installed
    beside this Python (a virtual environment need not be on the agent's PATH), else the
    one on PATH, else this Python running the kb_ai module."""
    beside = Path(sys.executable).parent / "kb-ai"
    if beside.is_file():
        return shlex.quote(str(beside))
    found = shutil.which("kb-ai")
    if found:
        return shlex.quote(found)
    return f"{shlex.quote(sys.executable)} -P -m kb_ai"


def is_ours(handler: Any) -> bool:
    command = handler.get("command") if isinstance(handler, dict) else None
    if not isinstance(command, str) or " hook " not in f" {command} ":
        return False
    return "kb-ai" in command or "-m kb_ai" in command


def _load(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(
            f"{path} is not valid JSON ({exc})", hint="fix it first; kb-ai will not overwrite it"
        ) from exc
    if not isinstance(data, dict):
        raise UsageError(
            f"{path} does not hold a JSON object", hint="fix it first; kb-ai will not overwrite it"
        )
    return data


def _save(path: Path, data: dict[str, Any]) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def install(
    agent: str, path: Path, *, prompt_hint: bool = False, kb: Path | None = None
) -> list[str]:
    """Add kb-ai's hooks to the settings file at ``path``; returns the events added."""
    data = _load(path)
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise UsageError(f'{path}: "hooks" is not an object', hint="fix it first")
    events = dict(EVENTS[agent])
    if prompt_hint:
        events[PROMPT_EVENT] = "prompt"
    base = kb_ai_command() + (f" --kb {shlex.quote(str(kb))}" if kb is not None else "")
    added = []
    for event, name in events.items():
        groups = hooks.setdefault(event, [])
        if any(is_ours(h) for g in groups if isinstance(g, dict) for h in g.get("hooks", [])):
            continue
        groups.append(
            {
                "hooks": [
                    {
                        "type": "command",
                        "command": f"{base} hook {name} --agent {agent}",
                        "timeout": TIMEOUT_SECONDS,
                    }
                ]
            }
        )
        added.append(event)
    _save(path, data)
    return added


def uninstall(path: Path) -> int:
    """Remove kb-ai's hooks from the settings file; returns how many handlers were removed.
    Groups and events left empty by the removal go too; nothing else is touched."""
    if not path.exists():
        return 0
    data = _load(path)
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return 0
    removed = 0
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                kept_groups.append(group)
                continue
            kept = [h for h in group["hooks"] if not is_ours(h)]
            removed += len(group["hooks"]) - len(kept)
            if kept:
                kept_groups.append({**group, "hooks": kept})
            elif len(group["hooks"]) == 0:
                kept_groups.append(group)
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    if not hooks:
        del data["hooks"]
    if removed:
        _save(path, data)
    return removed


def installed_events(path: Path) -> list[str]:
    """The events of the settings file at ``path`` that run a kb-ai hook."""
    try:
        data = _load(path)
    except UsageError:
        return []
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return []
    return [
        event
        for event, groups in hooks.items()
        if isinstance(groups, list)
        and any(is_ours(h) for g in groups if isinstance(g, dict) for h in g.get("hooks", []) or [])
    ]
