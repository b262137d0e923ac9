"""`kb-ai rm`, and the pruning of `kb-ai compile --prune`: sources out of the wiki."""

from __future__ import annotations

import asyncio

import click

from kb_ai.cli import Context, main, pass_context, print_removal, translate_errors


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
    from kb_ai.service import compiling

    okb = ctx.open_kb(ctx.settings())
    result = asyncio.run(
        compiling.remove(okb, list(sources), reason=reason or "removed with kb-ai rm")
    )
    print_removal(result, as_json)
