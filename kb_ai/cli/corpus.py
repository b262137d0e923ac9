"""`kb-ai corpus`: named slices of the wiki, built by a filter and asked with --corpus."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from kb_ai.cli import Context, main, pass_context, translate_errors

if TYPE_CHECKING:
    from kb_ai.service import OpenKb
    from kb_ai.service.corpora import Built


@main.group()
def corpus() -> None:
    """Corpora: named slices of the wiki (every pitfall of the hooks, last month's
    decisions), each a small file corpora/NAME.md kept in git with its filter and the
    articles it held when it was built.

    \b
    kb-ai corpus build NAME [filters]   find the articles and save the corpus
    kb-ai corpus list                   the corpora, with their size and filter
    kb-ai corpus show NAME              its filter and articles
    kb-ai corpus rebuild NAME           run its filter again over the wiki as it is
    kb-ai corpus rm NAME                remove it (the articles stay)
    kb-ai ask --corpus NAME QUESTION    answer from its articles only
    """


def _kb(ctx: Context) -> OpenKb:
    return ctx.open_kb(ctx.settings(detect=False))


def _split(values: tuple[str, ...]) -> tuple[str, ...]:
    """Repeated options and comma-separated values alike: --type decision,pitfall."""
    return tuple(v.strip() for value in values for v in value.split(",") if v.strip())


@corpus.command()
@click.argument("name")
@click.option("--type", "types", multiple=True, help="Article types (comma-separated or repeated).")
@click.option("--topic", "topics", multiple=True, help="Tags; an article with any of them.")
@click.option(
    "--source-kind",
    "kinds",
    multiple=True,
    help="Kinds of source: note, document, transcript (an article with a source of one).",
)
@click.option(
    "--files",
    multiple=True,
    metavar="PREFIX",
    help="A path prefix (kb_ai/hooks) that the article or one of its sources names.",
)
@click.option("--since", default="", metavar="DATE", help="Updated on or after DATE (YYYY-MM-DD).")
@click.option("--until", default="", metavar="DATE", help="Created on or before DATE (YYYY-MM-DD).")
@click.option("--query", default="", metavar="WORDS", help="Found by searching WORDS, best first.")
@click.option("--limit", type=click.IntRange(0), default=0, help="At most N articles (0: all).")
@click.option("--description", default="", metavar="TEXT", help="What the corpus is for.")
@click.option("--json", "as_json", is_flag=True, help="Print the corpus as JSON.")
@pass_context
@translate_errors
def build(
    ctx: Context,
    name: str,
    types: tuple[str, ...],
    topics: tuple[str, ...],
    kinds: tuple[str, ...],
    files: tuple[str, ...],
    since: str,
    until: str,
    query: str,
    limit: int,
    description: str,
    as_json: bool,
) -> None:
    """Save corpus NAME: the articles every filter given matches, in one commit.

    With --query the articles come best match first; without, the most recently updated
    first. A filter that matches nothing says so and saves nothing.
    """
    from kb_ai.service import corpora
    from wiki.corpora import CorpusFilter

    flt = CorpusFilter(
        types=_split(types),
        topics=_split(topics),
        source_kinds=_split(kinds),
        files=_split(files),
        since=since.strip(),
        until=until.strip(),
        query=" ".join(query.split()),
        limit=limit,
    )
    _print_built(corpora.build(_kb(ctx), name, flt, description=description), as_json)


@corpus.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the corpus as JSON.")
@pass_context
@translate_errors
def rebuild(ctx: Context, name: str, as_json: bool) -> None:
    """Run corpus NAME's filter again over the wiki as it is now, in one commit."""
    from kb_ai.service import corpora

    _print_built(corpora.rebuild(_kb(ctx), name), as_json)


@corpus.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print the corpora as JSON.")
@pass_context
@translate_errors
def list_(ctx: Context, as_json: bool) -> None:
    """The corpora, with how many articles each held when built and its filter."""
    from kb_ai.service import corpora

    found = corpora.corpora(_kb(ctx))
    if as_json:
        click.echo(json.dumps([c.as_dict() for c in found], ensure_ascii=False))
        return
    if not found:
        click.echo("No corpus yet: kb-ai corpus build NAME --type ... saves one.")
    for c in found:
        about = f" — {c.description}" if c.description else ""
        click.echo(f"{c.name}  {len(c.articles)} article(s), built {c.built}{about}")
        click.echo(f"    {c.filter.describe()}")


@corpus.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the corpus as JSON.")
@pass_context
@translate_errors
def show(ctx: Context, name: str, as_json: bool) -> None:
    """Corpus NAME: its filter, and its articles (those gone from the wiki marked)."""
    from kb_ai.service import corpora

    okb = _kb(ctx)
    c = corpora.corpus(okb, name)
    if as_json:
        click.echo(json.dumps(c.as_dict(), ensure_ascii=False))
        return
    click.echo(f"corpus {c.name} ({c.path}), built {c.built}")
    if c.description:
        click.echo(c.description)
    click.echo(f"filter: {c.filter.describe()}")
    click.echo(f"{len(c.articles)} article(s):")
    for path in c.articles:
        gone = "" if (okb.root / path).is_file() else "  (no longer in the wiki)"
        click.echo(f"  {path}{gone}")


@corpus.command()
@click.argument("name")
@pass_context
@translate_errors
def rm(ctx: Context, name: str) -> None:
    """Remove corpus NAME, in one commit; its articles stay in the wiki."""
    from kb_ai.service import corpora

    commit = corpora.remove(_kb(ctx), name)
    click.echo(f"Removed corpus {name}; commit {commit or '-'}")


def _print_built(built: Built, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(built.as_dict(), ensure_ascii=False))
        return
    c = built.corpus
    click.echo(f"Corpus {c.name}: {len(c.articles)} article(s) ({c.filter.describe()})")
    if built.before:
        for path in built.added:
            click.echo(f"  added    {path}")
        for path in built.dropped:
            click.echo(f"  dropped  {path}")
    else:
        for path in c.articles:
            click.echo(f"  {path}")
    click.echo(f"Saved as {c.path}; commit {built.commit or '- (unchanged)'}")
    click.echo(f'Ask it: kb-ai ask --corpus {c.name} "..."')
