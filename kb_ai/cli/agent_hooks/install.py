"""Installing kb-ai's hooks into an agent's own settings file, without clobbering it.

Claude Code reads ``.claude/settings.local.json`` (per user, not committed: the
default), ``.claude/settings.json`` (the team's, committed: ``--shared``) and
``~/.claude/settings.json`` (global); Codex reads ``.codex/hooks.json`` or
``~/.codex/hooks.json``. Both nest hooks as event -> matcher groups -> command
handlers. kb-ai's entries are recognised by their command, so install is idempotent and
uninstall removes exactly what install added.

The per-user file gets absolute commands (this Python, so a virtual environment need
not be on the agent's PATH), and where a POSIX ``/bin/sh`` exists the capture hook is
the shell script kb_ai/hooks/kb-ai-hook.sh (it runs on every SessionEnd, Stop and
PreCompact, and is done before a Python would have started); the shared file gets
``kb-ai-hook``, found on each teammate's PATH. Install keeps a copy of the file as it
was (in kb-ai's state directory, ``$XDG_STATE_HOME/kb-ai/installs``): uninstall writes
those bytes back when nothing but kb-ai's hooks changed, and removes a file (and
directory) that install created.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from kb_ai.errors import UsageError
from kb_ai.hooks.run import POSIX_SH, SHELL_HOOK, shell_hook_usable

AGENTS = ("claude-code", "codex")
# event -> hook name, per agent. Codex has no session-end event: its Stop runs after
# every turn, and the worker waits for the session to be quiet before compiling.
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
HOOK_SCRIPT = "kb-ai-hook"


def settings_path(agent: str, project: Path | None, *, shared: bool = False) -> Path:
    if agent not in AGENTS:
        raise UsageError(f"Unknown agent {agent!r}", hint=f"use one of: {', '.join(AGENTS)}")
    if agent == "codex":
        return (project or Path.home()) / ".codex/hooks.json"
    if project is None:
        return Path.home() / ".claude/settings.json"
    return project / (".claude/settings.json" if shared else ".claude/settings.local.json")


# the hooks the shell script answers itself where it can (capture; the prompt hint)
SHELL_HOOKS = ("session-end", "prompt")


def hook_command(name: str, agent: str, *, shared: bool, kb: Path | None = None) -> str:
    """The command an agent runs for hook ``name``."""
    if shared:
        base = HOOK_SCRIPT
    elif name in SHELL_HOOKS and shell_hook_usable():
        script, python = shlex.quote(str(SHELL_HOOK)), shlex.quote(sys.executable)
        base = f"{POSIX_SH} {script} --python {python}"
    else:
        base = f"{shlex.quote(sys.executable)} -P -m kb_ai.hooks"
    kb_part = f" --kb {shlex.quote(str(kb))}" if kb is not None else ""
    return f"{base} {name} --agent {agent}{kb_part}"


def is_ours(handler: Any) -> bool:
    command = handler.get("command") if isinstance(handler, dict) else None
    if not isinstance(command, str):
        return False
    if HOOK_SCRIPT in command or "-m kb_ai.hooks " in command:
        return True
    # installs of earlier versions ran `kb-ai [--kb DIR] hook NAME`
    return " hook " in f" {command} " and ("kb-ai" in command or "-m kb_ai" in command)


def load(path: Path) -> tuple[dict[str, Any], bytes | None]:
    """(the settings object, the file's bytes, None when there is no file)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}, None
    try:
        data = json.loads(raw.decode("utf-8") or "{}")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(
            f"{path} is not valid JSON ({exc})", hint="fix it first; kb-ai will not overwrite it"
        ) from exc
    if not isinstance(data, dict):
        raise UsageError(
            f"{path} does not hold a JSON object", hint="fix it first; kb-ai will not overwrite it"
        )
    if not isinstance(data.get("hooks", {}), dict):
        raise UsageError(f'{path}: "hooks" is not an object', hint="fix it first")
    return data, raw


def dump(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def state_home() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "kb-ai" / "installs"


def record_path(path: Path) -> Path:
    key = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:24]
    return state_home() / f"{key}.json"


def remember(path: Path, original: bytes | None, installed: bytes) -> None:
    """Keep the file as it was before kb-ai first touched it (not overwritten later)."""
    record = record_path(path)
    if record.exists():
        try:
            old = json.loads(record.read_text(encoding="utf-8"))
            old["installed"] = installed.decode("utf-8")
            write(record, json.dumps(old).encode())
            return
        except (OSError, ValueError):
            pass
    created_dir = not path.parent.exists()
    entry = {
        "path": str(path.resolve()),
        "original": original.decode("utf-8") if original is not None else None,
        "created_dir": created_dir,
        "installed": installed.decode("utf-8"),
    }
    write(record, json.dumps(entry).encode())


def plan_install(
    agent: str,
    path: Path,
    *,
    prompt_hint: bool = False,
    shared: bool = False,
    kb: Path | None = None,
) -> tuple[dict[str, Any], bytes | None, list[str]]:
    """(the new settings, the file's bytes before, the events added or updated), writing
    nothing. A kb-ai hook an earlier install wrote with another command (the Python
    capture hook, another interpreter's path) gets this install's command."""
    data, raw = load(path)
    hooks = data.setdefault("hooks", {})
    events = dict(EVENTS[agent])
    if prompt_hint:
        events[PROMPT_EVENT] = "prompt"
    added = []
    for event, name in events.items():
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise UsageError(f'{path}: hooks "{event}" is not a list', hint="fix it first")
        command = hook_command(name, agent, shared=shared, kb=kb)
        ours = [
            h for g in groups if isinstance(g, dict) for h in g.get("hooks") or [] if is_ours(h)
        ]
        if ours:
            stale = [h for h in ours if h.get("command") != command]
            for handler in stale:
                handler["command"] = command
            if stale:
                added.append(event)
            continue
        groups.append(
            {"hooks": [{"type": "command", "command": command, "timeout": TIMEOUT_SECONDS}]}
        )
        added.append(event)
    return data, raw, added


def install(
    agent: str,
    path: Path,
    *,
    prompt_hint: bool = False,
    shared: bool = False,
    kb: Path | None = None,
) -> list[str]:
    """Add kb-ai's hooks to the settings file at ``path``; returns the events added."""
    data, raw, added = plan_install(agent, path, prompt_hint=prompt_hint, shared=shared, kb=kb)
    if added:
        new = dump(data)
        remember(path, raw, new)
        write(path, new)
    return added


def _without_ours(data: dict[str, Any]) -> tuple[dict[str, Any], int]:
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return data, 0
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
            if kept or not group["hooks"]:
                kept_groups.append({**group, "hooks": kept})
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    if not hooks:
        del data["hooks"]
    return data, removed


def uninstall(path: Path) -> int:
    """Remove kb-ai's hooks from the settings file; returns how many handlers were removed."""
    if not path.exists():
        return 0
    data, _ = load(path)
    data, removed = _without_ours(data)
    if removed:
        restore(path, data)
    return removed


def restore(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` (the file without kb-ai's entries) back to ``path``: the original
    bytes when they say the same, no file at all when install created it and it is empty."""
    record = record_path(path)
    try:
        entry = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        entry = None
    original = entry.get("original") if isinstance(entry, dict) else None
    if isinstance(entry, dict) and original is None and not data:
        path.unlink()  # install created it, and nothing else is in it
        if entry.get("created_dir"):
            with contextlib.suppress(OSError):  # something else lives there now
                path.parent.rmdir()
    elif isinstance(original, str) and _same(original, data):
        write(path, original.encode("utf-8"))  # byte for byte as the user had it
    else:
        write(path, dump(data))
    record.unlink(missing_ok=True)


def _same(original: str, data: dict[str, Any]) -> bool:
    try:
        return json.loads(original or "{}") == data
    except ValueError:
        return False


def installed_events(path: Path) -> list[str]:
    """The events of the settings file at ``path`` that run a kb-ai hook."""
    try:
        data, _ = load(path)
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
