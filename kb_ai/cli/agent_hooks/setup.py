"""`kb-ai hooks install / uninstall`, as plain functions (the click commands only parse).

Everything that could make install refuse is checked before anything is written: the
knowledge base, the settings file (valid JSON, a "hooks" object), the MCP file.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kb_ai.cli.agent_hooks import mcp_config
from kb_ai.cli.agent_hooks.install import (
    install,
    installed_events,
    load,
    plan_install,
    settings_path,
    uninstall,
)
from kb_ai.cli.agent_hooks.marker import hooks_left, take_back
from kb_ai.cli.agent_hooks.marker import write_marker as write_marker_file
from kb_ai.errors import UsageError
from kb_ai.hooks.locate import find_kb, is_kb

Echo = Callable[[str], None]


def install_hooks(
    agent: str,
    scope: Path | None,
    kb: Path | None,
    *,
    echo: Echo,
    shared: bool = False,
    prompt_hint: bool = False,
    mcp: bool = False,
    check: bool = True,
) -> None:
    """Install for ``scope`` (a project directory, or None: the user's global settings)."""
    if kb is not None and not is_kb(kb):
        raise UsageError(
            f"{kb} is not a kb-ai knowledge base", hint=f"create it with: kb-ai --kb {kb} init"
        )
    if shared and scope is None:
        raise UsageError("--shared is for a project's team settings, not --global")
    write_marker = False
    if scope is not None:
        found = find_kb(scope)
        if kb is not None:
            write_marker = not is_kb(scope) and found != kb
        elif found is None:
            raise UsageError(
                f"No knowledge base found for {scope}",
                hint="name one: kb-ai --kb DIR hooks install ... (create it first with kb-ai --kb DIR init)",
            )
        target_kb = kb or found
    else:
        target_kb = kb
    if mcp and target_kb is None:
        raise UsageError("--mcp needs the knowledge base: kb-ai --kb DIR hooks install --mcp ...")
    path = settings_path(agent, scope, shared=shared)
    command_kb = kb if scope is None else None
    plan_install(agent, path, prompt_hint=prompt_hint, shared=shared, kb=command_kb)  # refuses now
    if mcp and agent == "claude-code" and scope is not None:
        load(mcp_config.config_path(agent, scope))  # a broken .mcp.json refuses now too
    if write_marker and scope is not None and kb is not None:
        marker = write_marker_file(scope, kb)
        echo(f"Wrote {marker}: this project's sessions go to {kb}")
    added = install(agent, path, prompt_hint=prompt_hint, shared=shared, kb=command_kb)
    if added:
        echo(f"Installed kb-ai hooks in {path}: {', '.join(added)}")
    else:
        echo(f"kb-ai hooks were already installed in {path}")
    if agent == "claude-code" and scope is not None:
        other = settings_path(agent, scope, shared=not shared)
        if other != path and installed_events(other):
            flag = "" if shared else " --shared"
            echo(
                f"kb-ai hooks are in {other} too (an earlier install?): each session would be "
                f"captured twice. Remove them with: kb-ai hooks uninstall --agent {agent}{flag}"
            )
    if shared:
        echo(
            "The team file runs `kb-ai-hook` from each teammate's PATH (pip install kb-ai "
            "puts it there)."
        )
    if scope is None and kb is None:
        echo(
            "Note: with no --kb, each session uses the KB found from its directory (.kb-ai marker) or KB_AI_DIR."
        )
    if mcp and target_kb is not None:
        _register_mcp(agent, scope, target_kb, shared=shared, echo=echo)
    if agent == "codex":
        echo("Codex asks you to review and trust new hooks before they run (see /hooks in Codex).")
    if target_kb is not None:
        from kb_ai.cli.agent_hooks.model_check import check_model

        ok, lines = check_model(target_kb, call=check)
        for line in lines:
            echo(line)


def _register_mcp(agent: str, scope: Path | None, kb: Path, *, shared: bool, echo: Echo) -> None:
    if agent == "claude-code" and scope is None:
        echo(f"Register the `ask` tool for every project with: {mcp_config.claude_global_hint(kb)}")
        return
    try:
        path, added = mcp_config.register(agent, scope, kb, shared=shared)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if added:
        echo(f"Registered the kb-ai MCP server (the `ask` tool) in {path}")
    else:
        echo(f"The kb-ai MCP server was already registered in {path}")


def uninstall_hooks(agent: str, scope: Path | None, *, echo: Echo, shared: bool = False) -> None:
    path = settings_path(agent, scope, shared=shared)
    removed = uninstall(path)
    echo(f"Removed {removed} kb-ai hook(s) from {path}" if removed else f"No kb-ai hooks in {path}")
    if mcp_config.unregister(agent, scope):
        echo(f"Removed the kb-ai MCP server from {mcp_config.config_path(agent, scope)}")
    if scope is not None and not hooks_left(scope):  # another agent's hooks still need it
        done = take_back(scope)
        if done:
            echo(done)
