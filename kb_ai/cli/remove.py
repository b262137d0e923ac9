"""`kb-ai rm`, and the pruning of `kb-ai compile --prune`: sources out of the wiki."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from kb_ai.cli import Context, main, pass_context, translate_errors


@main.command(name="rm")
@click.argument("sources", nargs=-1, required=True)
@click.option(
    "--reason",
    default="",
    help="Why, for the commit message and log.md (default: removed by hand).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@pass_context
@translate_errors
def rm(ctx: Context, sources: tuple[str, ...], reason: str, as_json: bool) -> None:
    """Remove sources and what they said from the wiki, in one commit.

    SOURCES are files as they were compiled (they may be gone from disk), raw/ paths or
    slugs, or globs ('notes/2025-*.md'). Each article a source fed is rewritten from
    its other sources' stored extractions (one model call each); an article left with
    no source is deleted. Nothing changes unless every rewrite succeeds.
    """
    from compiler.removal import find_sources, remove_sources
    from wiki import KnowledgeBase

    settings = ctx.settings()
    kb = KnowledgeBase.open(settings.kb_dir)
    found = find_sources(kb, sources)
    result = asyncio.run(
        remove_sources(kb, settings, found, reason=reason or "removed with kb-ai rm")
    )
    report(result, as_json)


def prune(ctx: Context, settings: Any, folders: Sequence[str], as_json: bool) -> None:
    """For `kb-ai compile --prune`: remove the sources gone from ``folders``."""
    from compiler.removal import missing_under, remove_sources
    from wiki import KnowledgeBase

    kb = KnowledgeBase.open(settings.kb_dir)
    for folder in folders:
        if not Path(folder).is_dir():
            continue
        gone = missing_under(kb, folder)
        if gone:
            result = asyncio.run(remove_sources(kb, settings, gone, reason=f"gone from {folder}"))
            if not as_json:
                report(result, False)


def report(result: Any, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(result.as_dict(), ensure_ascii=False))
        return
    for r in result.removed:
        click.echo(f"  removed  {r.raw_path} ({r.origin})")
    for path in result.deleted:
        click.echo(f"  deleted  {path} (no source left)")
    for path in result.rewritten:
        click.echo(f"  rewrote  {path}")
    u = result.usage
    click.echo(
        f"Removed {len(result.removed)} source(s); commit {result.commit or '-'}"
        f" · {u.calls} model call(s)"
    )
