"""`kb-ai hook ...` (run by agents), `kb-ai hooks install|uninstall|status`, `kb-ai worker`."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from kb_ai.cli import Context, main, pass_context, translate_errors
from kb_ai.errors import UsageError

AGENT_CHOICE = click.Choice(["claude-code", "codex"])


def _explicit_kb(ctx: click.Context) -> str | None:
    """--kb given on the command line (not KB_AI_DIR, which comes after the walk-up)."""
    root = ctx.find_root()
    if root.get_parameter_source("kb_dir") == click.core.ParameterSource.COMMANDLINE:
        return root.params.get("kb_dir")
    return None


@main.command("hook", hidden=False)
@click.argument("name", type=click.Choice(["session-start", "session-end", "prompt"]))
@click.option("--agent", type=AGENT_CHOICE, default="claude-code", show_default=True)
@click.pass_context
def hook(ctx: click.Context, name: str, agent: str) -> None:
    """Run an agent hook: reads the agent's hook event (JSON) on standard input.

    Fails open: on any error it prints nothing and exits 0, within a second.
    """
    from kb_ai.cli.agent_hooks.run import exit_after_deadline, run_hook

    exit_after_deadline()
    stdin_text = sys.stdin.read() if not sys.stdin.isatty() else ""
    out = run_hook(name, stdin_text, agent=agent, kb_dir=_explicit_kb(ctx))
    if out:
        sys.stdout.write(out if out.endswith("\n") else out + "\n")
    sys.stdout.flush()
    os._exit(0)  # nothing left to wait for: no atexit work may delay the agent


@main.group()
def hooks() -> None:
    """Install kb-ai's hooks into a coding agent: sessions are captured and compiled, and
    each new session starts with a short snapshot of what the project has learned."""


def _scope(project: str | None, global_: bool) -> Path | None:
    if project and global_:
        raise UsageError("Choose --project DIR or --global, not both")
    if global_:
        return None
    return Path(project or ".").resolve()


def agent_and_scope(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--agent, and where: --project DIR (default: the current directory) or --global."""
    fn = click.option(
        "--global", "global_", is_flag=True, help="The user's own settings, for every project."
    )(fn)
    fn = click.option(
        "--project",
        type=click.Path(file_okay=False),
        help="This project's settings (default: the current directory).",
    )(fn)
    return click.option("--agent", type=AGENT_CHOICE, required=True)(fn)


@hooks.command("install")
@agent_and_scope
@click.option(
    "--prompt-hint",
    is_flag=True,
    help="Also add a one-line hint (page count, no wiki text) to each prompt.",
)
@click.pass_context
@translate_errors
def hooks_install(
    ctx: click.Context, agent: str, project: str | None, global_: bool, prompt_hint: bool
) -> None:
    """Add kb-ai's hooks to the agent's settings, keeping everything already there."""
    from kb_ai.cli.agent_hooks.install import install, settings_path
    from kb_ai.cli.agent_hooks.locate import MARKER, find_kb, is_kb

    scope = _scope(project, global_)
    explicit = _explicit_kb(ctx)
    kb = Path(explicit).resolve() if explicit else None
    if kb is not None and not is_kb(kb):
        raise UsageError(
            f"{kb} is not a kb-ai knowledge base", hint=f"create it with: kb-ai --kb {kb} init"
        )
    if scope is not None:
        if kb is not None:
            if not is_kb(scope) and find_kb(scope) != kb:
                target = os.path.relpath(kb, scope) if kb.is_relative_to(scope) else str(kb)
                (scope / MARKER).write_text(
                    f'# The kb-ai knowledge base of this project\nkb = "{target}"\n',
                    encoding="utf-8",
                )
                click.echo(f"Wrote {scope / MARKER}: this project's sessions go to {kb}")
        elif find_kb(scope) is None:
            raise UsageError(
                f"No knowledge base found for {scope}",
                hint="name one: kb-ai --kb DIR hooks install ... (create it first with kb-ai --kb DIR init)",
            )
        path = settings_path(agent, scope)
        added = install(agent, path, prompt_hint=prompt_hint)
    else:
        path = settings_path(agent, None)
        added = install(agent, path, prompt_hint=prompt_hint, kb=kb)
        if kb is None:
            click.echo(
                "Note: with no --kb, each session uses the KB found from its directory (.kb-ai marker) or KB_AI_DIR."
            )
    if added:
        click.echo(f"Installed kb-ai hooks in {path}: {', '.join(added)}")
    else:
        click.echo(f"kb-ai hooks were already installed in {path}")
    if agent == "codex":
        click.echo(
            "Codex asks you to review and trust new hooks before they run (see /hooks in Codex)."
        )


@hooks.command("uninstall")
@agent_and_scope
@translate_errors
def hooks_uninstall(agent: str, project: str | None, global_: bool) -> None:
    """Remove kb-ai's hooks from the agent's settings; nothing else is touched."""
    from kb_ai.cli.agent_hooks.install import settings_path, uninstall

    path = settings_path(agent, _scope(project, global_))
    removed = uninstall(path)
    click.echo(
        f"Removed {removed} kb-ai hook(s) from {path}" if removed else f"No kb-ai hooks in {path}"
    )


@hooks.command("status")
@click.option(
    "--project",
    type=click.Path(file_okay=False),
    help="The project (default: the current directory).",
)
@translate_errors
def hooks_status(project: str | None) -> None:
    """Where kb-ai's hooks are installed, which KB this project's sessions go to, and the queue."""
    from contextlib import closing

    from compiler.queue import TaskQueue
    from kb_ai.cli.agent_hooks.install import AGENTS, installed_events, settings_path
    from kb_ai.cli.agent_hooks.locate import find_kb
    from wiki import KnowledgeBase, open_state

    scope = Path(project or ".").resolve()
    for agent in AGENTS:
        for label, base in (("project", scope), ("global", None)):
            path = settings_path(agent, base)
            events = installed_events(path)
            state = ", ".join(events) if events else "not installed"
            click.echo(f"{agent:12} {label:8} {path}: {state}")
    kb = find_kb(scope)
    if kb is None:
        click.echo(
            f"Knowledge base for {scope}: none found (kb-ai --kb DIR hooks install --project {scope})"
        )
        return
    with closing(open_state(KnowledgeBase.open(kb))) as conn:
        counts = TaskQueue(KnowledgeBase.open(kb), conn).counts()
    click.echo(f"Knowledge base for {scope}: {kb}")
    click.echo("Queue: " + ", ".join(f"{n} {state}" for state, n in counts.items()))


@main.command()
@click.option(
    "--drain", is_flag=True, help="Stop when the queue is empty (what agent hooks start)."
)
@pass_context
@translate_errors
def worker(ctx: Context, drain: bool) -> None:
    """Compile queued submissions (agent sessions, uploads) through the normal pipeline."""
    from compiler.worker import Worker
    from wiki import KnowledgeBase

    settings = ctx.settings()
    kb = KnowledgeBase.open(settings.kb_dir)
    w = Worker(kb, settings)
    if drain:
        n = asyncio.run(w.drain())
        click.echo(f"Compiled {n} queued task(s)")
    else:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(w.run_forever())
