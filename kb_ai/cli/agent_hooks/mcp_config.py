"""Registering kb-ai's MCP server (the `ask` tool) with an agent: `hooks install --mcp`.

Claude Code reads a project's servers from ``.mcp.json`` (``{"mcpServers": {name:
{"command", "args"}}}``); Codex from ``config.toml`` (``[mcp_servers.<name>]`` with
``command`` and ``args``), the project's ``.codex/config.toml`` or ``~/.codex/``. The
server is named ``kb-ai``, the name the session-start snapshot tells the agent to use.
Uninstall takes out only that entry (the JSON file goes back byte for byte when it is
the only change; the TOML block is removed by its marker lines).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

from kb_ai.cli.agent_hooks.install import load, remember, restore, write

SERVER = "kb-ai"
_BEGIN = "# >>> kb-ai MCP server (kb-ai hooks install --mcp) >>>"
_END = "# <<< kb-ai MCP server <<<"


def config_path(agent: str, project: Path | None) -> Path:
    if agent == "claude-code":
        if project is None:
            raise ValueError("Claude Code's global servers are added with `claude mcp add`")
        return project / ".mcp.json"
    return (project or Path.home()) / ".codex" / "config.toml"


def server_command(kb: Path, project: Path | None, *, shared: bool) -> list[str]:
    """The command and arguments that start the server for ``kb``."""
    if shared:
        where = os.path.relpath(kb, project) if project and kb.is_relative_to(project) else str(kb)
        return ["kb-ai", "mcp", "--kb", where]
    return [sys.executable, "-P", "-m", "kb_ai", "mcp", "--kb", str(kb)]


def register(agent: str, project: Path | None, kb: Path, *, shared: bool) -> tuple[Path, bool]:
    """Add the server; returns (the file, whether it was added now)."""
    path = config_path(agent, project)
    command = server_command(kb, project, shared=shared)
    if agent == "claude-code":
        data, raw = load(path)
        servers = data.setdefault("mcpServers", {})
        if not isinstance(servers, dict):
            raise ValueError(f'{path}: "mcpServers" is not an object; fix it first')
        if SERVER in servers:
            return path, False
        servers[SERVER] = {"command": command[0], "args": command[1:]}
        new = (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        remember(path, raw, new)
        write(path, new)
        return path, True
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if _BEGIN in text or f"[mcp_servers.{SERVER}]" in text or f'[mcp_servers."{SERVER}"]' in text:
        return path, False
    block = (
        f'{_BEGIN}\n[mcp_servers."{SERVER}"]\ncommand = {json.dumps(command[0])}\n'
        f"args = {json.dumps(command[1:])}\n{_END}\n"
    )
    sep = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
    write(path, (text + sep + block).encode("utf-8"))
    return path, True


def unregister(agent: str, project: Path | None) -> bool:
    try:
        path = config_path(agent, project)
    except ValueError:
        return False
    if not path.exists():
        return False
    if agent == "claude-code":
        data, _ = load(path)
        servers = data.get("mcpServers")
        if not isinstance(servers, dict) or SERVER not in servers:
            return False
        del servers[SERVER]
        if not servers:
            del data["mcpServers"]
        restore(path, data)
        return True
    text = path.read_text(encoding="utf-8")
    start, end = text.find(_BEGIN), text.find(_END)
    if start < 0 or end < start:
        return False
    rest = text[:start].rstrip("\n") + text[end + len(_END) :].lstrip("\n")
    rest = rest + "\n" if rest and not rest.endswith("\n") else rest
    if rest.strip():
        write(path, rest.encode("utf-8"))
    else:
        path.unlink()
    return True


def claude_global_hint(kb: Path) -> str:
    return "claude mcp add --scope user kb-ai -- " + " ".join(
        shlex.quote(a) for a in server_command(kb, None, shared=False)
    )
