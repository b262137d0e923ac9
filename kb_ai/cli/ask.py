"""`kb-ai ask` and `kb-ai chat`: answers streamed to the terminal, with their sources.

Kept light at start-up: a whole `kb-ai ask` process is what a user waits for, so the
OpenAI-compatible fast path (plain httpx) is used where it can be, instead of litellm.
"""

from __future__ import annotations

import asyncio
import json
import sys
from contextlib import closing
from typing import Any

import click

from kb_ai.cli import CliError, Context, main, pass_context, translate_errors
from kb_ai.errors import KbAiError, UsageError


def _open(ctx: Context, model: str | None):
    from kb_ai.llm import open_llm
    from wiki import KnowledgeBase

    settings = ctx.settings(model=model or ctx.model)
    kb = KnowledgeBase.open(settings.kb_dir)
    ctx.announce(settings)
    llm = open_llm(settings, db_path=kb.state_db)
    return kb, settings, llm


async def _stream_answer(
    asker, question: str, *, history=(), paths=None, as_json: bool
) -> dict[str, Any]:
    """Run one question; print deltas as they come (unless --json); return the done data."""
    streamed: list[str] = []
    async for event in asker.events(question, history=history, paths=paths):
        if event.type == "delta" and not as_json:
            streamed.append(event.data["text"])
            click.echo(event.data["text"], nl=False)
            sys.stdout.flush()
        elif event.type == "note":
            click.echo(event.data["text"], err=True)
        elif event.type == "status" and not as_json and sys.stderr.isatty():
            click.echo(f"\r\x1b[2m{_doing(event.data)}…\x1b[0m\x1b[K", nl=False, err=True)
        elif event.type == "error":
            if streamed:
                click.echo()
            raise CliError(event.error or KbAiError(event.data["error"]))
        elif event.type == "done":
            if sys.stderr.isatty() and not as_json:
                click.echo("\r\x1b[K", nl=False, err=True)
            return event.data
    raise CliError(KbAiError("the answer ended without a result"))


def _doing(status: dict[str, Any]) -> str:
    """A status event in words: the stage, with the pages being read or how many
    sentences a small model chooses among."""
    if status.get("paths"):
        return f"reading {', '.join(status['paths'])}"
    if status.get("sentences"):
        return f"choosing among {status['sentences']} sentences"
    return str(status["stage"])


def _print_sources(done: dict[str, Any]) -> None:
    click.echo()
    if done["citations"]:
        click.echo("\nSources:")
        for c in done["citations"]:
            click.echo(f"  [{c['title']}]({c['path']})")
    if done["read"]:
        click.echo("Read: " + ", ".join(done["read"]))
    if done.get("findings"):
        counts: dict[str, int] = {}
        for f in done["findings"]:
            counts[f["check"]] = counts.get(f["check"], 0) + 1
        listed = ", ".join(f"{n} {check}" for check, n in counts.items())
        click.echo(f"Checks: {listed} (what was removed and why: --json)")


@main.command()
@click.argument("question", nargs=-1, required=True)
@click.option("--paths", help="Answer from exactly these pages (comma-separated wiki paths).")
@click.option("--model", help="Model for this question (overrides KB_AI_MODEL and kb-ai.toml).")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print answer, citations, pages read, usage, covered and the checks' findings as JSON.",
)
@pass_context
@translate_errors
def ask(
    ctx: Context, question: tuple[str, ...], paths: str | None, model: str | None, as_json: bool
) -> None:
    """Answer QUESTION from the wiki, with [Title](path) citations.

    The answer streams as it is written, each sentence once it is checked against the
    pages read (numbers, names and dates must be in them; a cited page must contain the
    claim), followed by its sources and the pages read. When the wiki does not cover
    the question, the answer says so and cites nothing, without asking the model when
    no page shares a meaningful word with the question.
    """
    from retrieval import Asker

    if not " ".join(question).strip():
        raise UsageError(
            "The question is empty", hint='ask something, e.g. kb-ai ask "Why did we ..."'
        )
    wanted = [p.strip() for p in paths.split(",") if p.strip()] if paths else None
    if paths is not None and not wanted:
        raise UsageError("--paths names no page", hint="e.g. --paths wiki/decision/dns.md")
    kb, settings, llm = _open(ctx, model)
    asker = Asker(kb, settings, llm)

    async def go() -> dict[str, Any]:
        try:
            return await _stream_answer(asker, " ".join(question), paths=wanted, as_json=as_json)
        finally:
            await llm.aclose()

    done = asyncio.run(go())
    if as_json:
        keys = ("answer", "citations", "read", "usage", "covered", "findings")
        click.echo(json.dumps({k: done[k] for k in keys}, ensure_ascii=False))
    else:
        _print_sources(done)


@main.command()
@click.option("--session", "session_id", help="Reopen a saved chat session by its id.")
@click.option("--model", help="Model for this chat (overrides KB_AI_MODEL and kb-ai.toml).")
@pass_context
@translate_errors
def chat(ctx: Context, session_id: str | None, model: str | None) -> None:
    """Ask questions in a loop; follow-ups can refer to earlier answers.

    Each follow-up is rewritten into a standalone question before pages are picked.
    The conversation is saved (see --session). End with Ctrl-D or an empty line.
    """
    from retrieval import Asker, ChatStore
    from wiki import open_state

    kb, settings, llm = _open(ctx, model)
    asker = Asker(kb, settings, llm)
    with closing(open_state(kb)) as conn:
        store = ChatStore(conn)
        if session_id:
            session = store.get(session_id)
            click.echo(
                f"Reopened chat {session['id']} ({session['title']}), {len(session['messages'])} message(s)."
            )
        else:
            session = None
        loop = asyncio.new_event_loop()
        try:
            while True:
                try:
                    question = input("\nyou> ").strip()
                except (EOFError, KeyboardInterrupt):
                    click.echo()
                    break
                if not question or question in ("exit", "quit"):
                    break
                if session is None:
                    session = store.create(question)
                    click.echo(f"(chat {session['id']})", err=True)
                history = store.history(session["id"])
                try:
                    done = loop.run_until_complete(
                        _stream_answer(asker, question, history=history, as_json=False)
                    )
                except CliError as exc:
                    click.echo(f"Error: {exc.message}", err=True)
                    continue
                _print_sources(done)
                store.append(session["id"], "user", question)
                store.append(session["id"], "assistant", done["answer"], done["citations"])
        finally:
            loop.run_until_complete(llm.aclose())
            loop.close()
    if session is not None:
        click.echo(f"Saved as chat {session['id']}: kb-ai chat --session {session['id']}")
