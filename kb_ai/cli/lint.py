"""`kb-ai lint`: the wiki's health, with the mechanical repairs on request."""

from __future__ import annotations

import json
import sys
import time

import click

from kb_ai.cli import EXIT_FAILED, Context, main, pass_context, translate_errors


@main.command()
@click.option(
    "--fix",
    is_flag=True,
    help="Repair what is mechanical (indexes, tables, dead links) and commit.",
)
@click.option(
    "--deep", is_flag=True, help="Also ask the model for contradictions and unsupported claims."
)
@click.option(
    "--budget",
    type=click.IntRange(1, 10_000),
    default=20,
    show_default=True,
    help="With --deep: at most this many model calls.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@pass_context
@translate_errors
def lint(ctx: Context, fix: bool, deep: bool, budget: int, as_json: bool) -> None:
    """Check the wiki: links, indexes, sources, frontmatter, state tables, numbers,
    dates and names no source states, articles with one title (and the values they
    disagree on), sources that look like revisions of each other. No model call unless
    --deep. --fix also merges duplicates that came from revisions of one source.

    Exit status: 0 when no error remains (warnings allowed), 1 when some do.
    """
    import asyncio

    from kb_ai.service import linting

    started = time.monotonic()
    settings = ctx.settings(detect=deep, announce=deep)
    okb = ctx.open_kb(settings)
    report = linting.lint(okb, fix=fix)
    if deep:
        report.findings += asyncio.run(linting.deep_findings(okb, budget=budget))
    seconds = time.monotonic() - started
    if as_json:
        click.echo(
            json.dumps(report.as_dict() | {"seconds": round(seconds, 3)}, ensure_ascii=False)
        )
    else:
        _print(report, seconds, fix)
    if report.errors:
        sys.exit(EXIT_FAILED)


def _print(report, seconds: float, fix: bool) -> None:
    for f in report.fixed:
        click.echo(f"fixed    {f.path}: {f.message}")
    for f in report.findings:
        mark = " (--fix repairs it)" if f.fixable and not fix else ""
        click.echo(f"{f.severity:<8} {f.path}: [{f.check}] {f.message}{mark}")
    errors, warnings = len(report.errors), len(report.warnings)
    click.echo(
        f"{report.articles} article(s): {errors} error(s), {warnings} warning(s)"
        f" in {seconds:.2f} s" + (f"; commit {report.commit}" if report.commit else "")
    )
    fixable = sum(f.fixable for f in report.findings)
    if fixable and not fix:
        click.echo(f"`kb-ai lint --fix` repairs {fixable} of them.")
