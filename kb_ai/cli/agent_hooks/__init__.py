"""Agent memory hooks: capture coding-agent sessions, hand back a short snapshot."""

from kb_ai.cli.agent_hooks.install import (
    AGENTS,
    install,
    installed_events,
    settings_path,
    uninstall,
)
from kb_ai.cli.agent_hooks.locate import find_kb
from kb_ai.cli.agent_hooks.run import run_hook
from kb_ai.cli.agent_hooks.snapshot import build_snapshot, session_snapshot

__all__ = [
    "AGENTS",
    "build_snapshot",
    "find_kb",
    "install",
    "installed_events",
    "run_hook",
    "session_snapshot",
    "settings_path",
    "uninstall",
]
