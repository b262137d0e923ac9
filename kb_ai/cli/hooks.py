"""`kb-ai hook ...` (run by agents), `kb-ai hooks install|uninstall|status`, `kb-ai worker`."""

from __future__ import annotations

import asyncio
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

    Fails open: on any error it prints nothing and exits 0. New installs run the same
    hook as `kb-ai-hook` (python -m kb_ai.hooks), which starts much faster.
    """
    from kb_ai.hooks.hint import prompt_hint
    from kb_ai.hooks.run import run_hook

    stdin_text = sys.stdin.read() if not sys.stdin.isatty() else ""
    out = run_hook(name, stdin_text, agent=agent, kb_dir=_explicit_kb(ctx), prompt=prompt_hint)
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
    """--agent, and where: --project DIR (default: the current directory) or --global,
    and --shared for the project's team file."""
    fn = click.option(
        "--shared",
        is_flag=True,
        help="The project's team settings (.claude/settings.json, committed), with commands "
        "found on PATH; default: your own .claude/settings.local.json.",
    )(fn)
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
@click.option(
    "--mcp",
    is_flag=True,
    help="Also register the kb-ai MCP server (the `ask` tool) with the agent.",
)
@click.option("--no-check", is_flag=True, help="Do not call the model to check it answers.")
@click.pass_context
@translate_errors
def hooks_install(
    ctx: click.Context,
    agent: str,
    project: str | None,
    global_: bool,
    shared: bool,
    prompt_hint: bool,
    mcp: bool,
    no_check: bool,
) -> None:
    """Add kb-ai's hooks to the agent's settings, keeping everything already there, and
    check that the knowledge base's model answers (captured sessions need it)."""
    from kb_ai.cli.agent_hooks.setup import install_hooks

    explicit = _explicit_kb(ctx)
    install_hooks(
        agent,
        _scope(project, global_),
        Path(explicit).resolve() if explicit else None,
        echo=click.echo,
        shared=shared,
        prompt_hint=prompt_hint,
        mcp=mcp,
        check=not no_check,
    )


@hooks.command("uninstall")
@agent_and_scope
@translate_errors
def hooks_uninstall(agent: str, project: str | None, global_: bool, shared: bool) -> None:
    """Remove kb-ai's hooks (and its MCP server entry) from the agent's settings."""
    from kb_ai.cli.agent_hooks.setup import uninstall_hooks

    uninstall_hooks(agent, _scope(project, global_), echo=click.echo, shared=shared)


def _status_kb(ctx: click.Context, scope: Path) -> Path | None:
    from kb_ai.hooks.locate import find_kb, is_kb

    explicit = _explicit_kb(ctx)
    if explicit:
        kb = Path(explicit).resolve()
        if not is_kb(kb):
            raise UsageError(f"{kb} is not a kb-ai knowledge base")
        return kb
    return find_kb(scope)


@hooks.command("status")
@click.option(
    "--project",
    type=click.Path(file_okay=False),
    help="The project (default: the current directory).",
)
@click.pass_context
@translate_errors
def hooks_status(ctx: click.Context, project: str | None) -> None:
    """Where kb-ai's hooks are installed, which KB this project's sessions go to, and what
    became of its captured sessions (waiting, compiled, failed with the reason)."""
    from kb_ai.cli.agent_hooks.install import AGENTS, installed_events, settings_path
    from kb_ai.cli.agent_hooks.status import capture_status

    scope = Path(project or ".").resolve()
    for agent in AGENTS:
        places = [("project", settings_path(agent, scope)), ("global", settings_path(agent, None))]
        if agent == "claude-code":
            places.insert(1, ("shared", settings_path(agent, scope, shared=True)))
        for label, path in places:
            events = installed_events(path)
            state = ", ".join(events) if events else "not installed"
            click.echo(f"{agent:12} {label:8} {path}: {state}")
    kb = _status_kb(ctx, scope)
    if kb is None:
        click.echo(
            f"Knowledge base for {scope}: none found (kb-ai --kb DIR hooks install --project {scope})"
        )
        return
    click.echo(f"Knowledge base: {kb}")
    for line in capture_status(kb).lines():
        click.echo(line)


@hooks.command("retry")
@click.option(
    "--project",
    type=click.Path(file_okay=False),
    help="The project (default: the current directory).",
)
@click.pass_context
@translate_errors
def hooks_retry(ctx: click.Context, project: str | None) -> None:
    """Queue every failed session capture again now, and start a worker to compile them."""
    from contextlib import closing

    from compiler.captures import retry_all
    from kb_ai.hooks.run import start_worker
    from wiki import KnowledgeBase, open_state

    kb = _status_kb(ctx, Path(project or ".").resolve())
    if kb is None:
        raise UsageError("No knowledge base found here", hint="name it: kb-ai --kb DIR hooks retry")
    with closing(open_state(KnowledgeBase.open(kb))) as conn:
        tasks, captures = retry_all(KnowledgeBase.open(kb), conn)
    if not tasks and not captures:
        click.echo("No failed captures to retry")
        return
    click.echo(
        f"Queued again: {tasks} session(s) that failed to compile, {captures} capture(s) that could not be read"
    )
    start_worker(kb)
    click.echo("A worker is compiling them (kb-ai hooks status to follow)")


@main.command()
@click.option(
    "--drain", is_flag=True, help="Stop when the queue is empty (what agent hooks start)."
)
@click.option(
    "--batch",
    type=click.IntRange(1, 256),
    default=16,
    show_default=True,
    help="Tasks claimed and compiled in one run (fewer: several workers share a burst).",
)
@pass_context
@translate_errors
def worker(ctx: Context, drain: bool, batch: int) -> None:
    """Compile queued submissions (agent sessions, uploads) through the normal pipeline."""
    from kb_ai.service import Actor, compiling, open_kb

    settings = ctx.settings()
    okb = open_kb(settings=settings, actor=Actor.worker())  # submitters author their tasks
    ctx.announce(settings)
    if drain:
        n = asyncio.run(compiling.worker(okb, batch=batch).drain())
        click.echo(f"Compiled {n} queued task(s)")
    else:
        _serve_queue(okb, batch)


def _serve_queue(okb, batch: int) -> None:
    """Compile what is queued until Ctrl-C or SIGTERM, surviving failures as `kb-ai
    serve`'s workers do: the shared database away (a storage fault) hands the tasks held
    back to the queue and the worker tries again, pausing longer after each failure in a
    row, so it recovers by itself once the database answers (it used to exit)."""
    import signal
    import threading

    from web.pool import WorkerPool

    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())  # a container's stop
    pool = WorkerPool(okb, size=1, batch=batch, poll_seconds=0.5)
    pool.start()
    try:
        while not stop.wait(1.0):
            pool.health()  # (starts its thread again, were it ever to end)
    except KeyboardInterrupt:
        pass
    finally:
        pool.stop()  # as Ctrl-C stops a compile: finished work committed, the rest queued
        signal.signal(signal.SIGTERM, previous)
