"""The ``.kb-ai`` marker file that `hooks install --project` writes to name the
project's knowledge base (read by kb_ai/hooks/locate.py), and that uninstall takes back.

Install keeps the marker's bytes as they were (none, or a marker of the user's that it
replaced) beside its copies of the settings files (install.remember). Uninstall, once no
kb-ai hook is left in any of the project's agent settings, puts those bytes back (or
removes the marker it created); a marker changed since install is the user's now, and
stays.
"""

from __future__ import annotations

import json
from pathlib import Path

from kb_ai.cli.agent_hooks.install import (
    AGENTS,
    installed_events,
    record_path,
    remember,
    settings_path,
    write,
)
from kb_ai.hooks.locate import MARKER


def marker_text(scope: Path, kb: Path) -> str:
    where = str(kb.relative_to(scope)) if kb.is_relative_to(scope) else str(kb)
    return f'# The kb-ai knowledge base of this project\nkb = "{where}"\n'


def write_marker(scope: Path, kb: Path) -> Path:
    path = scope / MARKER
    try:
        before: bytes | None = path.read_bytes()
    except FileNotFoundError:
        before = None
    text = marker_text(scope, kb).encode("utf-8")
    remember(path, before, text)
    write(path, text)
    return path


def hooks_left(scope: Path) -> bool:
    """Whether any agent settings file of the project still runs a kb-ai hook."""
    paths = {settings_path(agent, scope, shared=s) for agent in AGENTS for s in (False, True)}
    return any(installed_events(p) for p in paths)


def take_back(scope: Path) -> str | None:
    """Undo what install did to the project's marker; returns what was done, or None
    when install wrote no marker here."""
    path = scope / MARKER
    record = record_path(path)
    try:
        entry = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict):
        return None
    original, installed = entry.get("original"), entry.get("installed")
    try:
        current: str | None = path.read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError):
        current = None
    record.unlink(missing_ok=True)
    if current is None:
        return None
    if current != installed:
        return f"Kept {path}: it was changed after install"
    if isinstance(original, str):
        write(path, original.encode("utf-8"))
        return f"Restored {path} as it was before install"
    path.unlink()
    return f"Removed {path}"
