"""`kb-ai watch`: compile folders once, then whatever changes in them, until Ctrl-C."""

from __future__ import annotations

import asyncio
from contextlib import suppress
from pathlib import Path

import click

from kb_ai.cli import Context, main, pass_context, translate_errors


@main.command()
@click.argument("dirs", nargs=-1, required=True, type=click.Path(exists=True, path_type=str))
@click.option(
    "--debounce",
    type=click.IntRange(50, 60_000),
    default=1000,
    show_default=True,
    help="Milliseconds to gather changes before compiling them.",
)
@pass_context
@translate_errors
def watch(ctx: Context, dirs: tuple[str, ...], debounce: int) -> None:
    """Compile DIRS once, then every file that changes in them, until Ctrl-C.

    Changes arriving together are one compile run (and one commit). A deleted file is
    reported, not acted on: its articles stay.
    """
    from compiler.watch import Round
    from kb_ai.service import compiling

    settings = ctx.settings()
    okb = ctx.open_kb(settings)
    ctx.announce(settings)

    def report(r: Round) -> None:
        res = r.result
        if res is not None:
            what = "all" if r.first else f"{len(r.changed)} changed"
            click.echo(
                f"Compiled {len(res.compiled)} of {res.sources} ({what}), "
                f"{len(res.skipped)} unchanged, {len(res.failed)} failed"
                + (f" · commit {res.commit}" if res.commit else "")
            )
            for f in res.failed:
                click.echo(f"  failed   {f.source}: {f.error}", err=True)
        for path in r.deleted:
            click.echo(f"  deleted  {path} (its articles are kept; nothing was removed)")
        if r.first:
            click.echo(f"Watching {', '.join(str(Path(d)) for d in dirs)} (Ctrl-C to stop)")

    with suppress(KeyboardInterrupt):  # Ctrl-C before the watch took over the signal
        asyncio.run(compiling.watch(okb, list(dirs), report, debounce_ms=debounce))
    click.echo("Stopped watching.")
