"""`kb-ai ask` and `kb-ai chat`: answers streamed to the terminal, with their sources.

Kept light at start-up: a whole `kb-ai ask` process is what a user waits for, so the
OpenAI-compatible fast path (plain httpx) is used where it can be, instead of litellm.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from contextlib import closing
from typing import TYPE_CHECKING

import click

from kb_ai.cli import CliError, Context, main, pass_context, translate_errors
from kb_ai.errors import KbAiError, UsageError

if TYPE_CHECKING:
    from kb_ai.llm import LLM
    from kb_ai.service import OpenKb
    from retrieval import Answer, Status, Turn


def _open(ctx: Context, model: str | None) -> OpenKb:
    settings = ctx.settings(model=model or ctx.model)
    okb = ctx.open_kb(settings)
    ctx.announce(settings)
    return okb


async def _stream_answer(
    okb: OpenKb,
    question: str,
    *,
    history: Sequence[Turn] = (),
    paths: list[str] | None = None,
    llm: LLM | None = None,
    corpus: str | None = None,
    as_json: bool,
    notes: list[str] | None = None,
) -> Answer:
    """Run one question; print deltas as they come (unless --json); return the answer.
    ``notes``: a list to which the notes said before the answer are added."""
    from kb_ai.service.asking import ask_events
    from retrieval import Delta, Done, Error, Note, Status

    streamed: list[str] = []
    events = ask_events(okb, question, history=history, paths=paths, llm=llm, corpus=corpus)
    async for event in events:
        if isinstance(event, Delta) and not as_json:
            streamed.append(event.text)
            click.echo(event.text, nl=False)
            sys.stdout.flush()
        elif isinstance(event, Note):
            click.echo(event.text, err=True)
            if notes is not None:
                notes.append(event.text)
        elif isinstance(event, Status) and not as_json and sys.stderr.isatty():
            click.echo(f"\r\x1b[2m{_doing(event)}…\x1b[0m\x1b[K", nl=False, err=True)
        elif isinstance(event, Error):
            if streamed:
                click.echo()
            raise CliError(event.error)
        elif isinstance(event, Done):
            if sys.stderr.isatty() and not as_json:
                click.echo("\r\x1b[K", nl=False, err=True)
            return event.answer
    raise CliError(KbAiError("the answer ended without a result"))


def _doing(status: Status) -> str:
    """A status event in words: the stage, with the pages being read or how many
    sentences a small model chooses among."""
    if status.paths:
        return f"reading {', '.join(status.paths)}"
    if status.sentences:
        return f"choosing among {status.sentences} sentences"
    return status.stage


def _print_sources(answer: Answer) -> None:
    click.echo()
    if answer.citations:
        click.echo("\nSources:")
        for c in answer.citations:
            click.echo(
                f"  [{c.title}]({c.path})" + (f"  from knowledge base {c.kb}" if c.kb else "")
            )
    if answer.read:
        click.echo("Read: " + ", ".join(answer.read))
    if answer.checked:  # the citation-faithfulness check of every answer
        click.echo(answer.checked)
    if answer.findings:
        counts: dict[str, int] = {}
        for f in answer.findings:
            counts[f.check] = counts.get(f.check, 0) + 1
        listed = ", ".join(f"{n} {check}" for check, n in counts.items())
        click.echo(f"Checks: {listed} (what was removed and why: --json)")


@main.command()
@click.argument("question", nargs=-1, required=True)
@click.option("--paths", help="Answer from exactly these pages (comma-separated wiki paths).")
@click.option("--corpus", metavar="NAME", help="Answer from this corpus only (kb-ai corpus list).")
@click.option("--model", help="Model for this question (overrides KB_AI_MODEL and kb-ai.toml).")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print answer, citations, pages read, usage, covered, the checks' findings, and "
    "each claim with its supporting span and the citation faithfulness, as JSON.",
)
@pass_context
@translate_errors
def ask(
    ctx: Context,
    question: tuple[str, ...],
    paths: str | None,
    corpus: str | None,
    model: str | None,
    as_json: bool,
) -> None:
    """Answer QUESTION from the wiki, with [Title](path) citations.

    The answer streams as it is written, each sentence once it is checked against the
    pages read (numbers, names and dates must be in them; a cited page must contain the
    claim), followed by its sources and the pages read. When the wiki does not cover
    the question, the answer says so and cites nothing, without asking the model when
    no page shares a meaningful word with the question.

    With --corpus, only that corpus's articles: read whole when they fit
    corpus_budget_tokens (a question across them gets a synthesis citing each record
    it draws on), else selected among as the wiki's are, which the answer says.
    """
    from retrieval import check_question

    text = check_question(" ".join(question))
    wanted = [p.strip() for p in paths.split(",") if p.strip()] if paths else None
    if paths is not None and not wanted:
        raise UsageError("--paths names no page", hint="e.g. --paths wiki/decision/dns.md")
    okb = _open(ctx, model)
    answer = asyncio.run(_stream_answer(okb, text, paths=wanted, corpus=corpus, as_json=as_json))
    if as_json:
        keys = ("answer", "citations", "read", "usage", "covered", "see_also", "findings")
        keys += ("claims", "faithfulness")
        keys += ("corpus",) if corpus else ()
        done = answer.as_dict()
        click.echo(json.dumps({k: done[k] for k in keys}, ensure_ascii=False))
    else:
        _print_sources(answer)


#: How much of a reopened chat is printed before its prompt: its last turns, each
#: answer shortened to about this many characters.
EARLIER_TURNS = 3
EARLIER_CHARS = 400


def _print_earlier(session: dict) -> None:
    """A reopened chat's last few turns, briefly: each question, its answer (or that it
    failed, with its error), the answer's sources and its checked line."""
    messages = session["messages"]
    kept = sum(1 for m in messages if not m["error"])  # a failed answer is no message
    click.echo(f"Reopened chat {session['id']} ({session['title']}), {kept} message(s).")
    turns: list[list[dict]] = []
    for m in messages:
        if m["role"] == "user" or not turns:
            turns.append([])
        turns[-1].append(m)
    if len(turns) > EARLIER_TURNS:
        click.echo(f"(the last {EARLIER_TURNS} of {len(turns)} questions)")
    for turn in turns[-EARLIER_TURNS:]:
        click.echo()
        for m in turn:
            if m["role"] == "user":
                click.echo(f"you> {m['content']}")
            elif m["error"]:  # its message says the hint too (KbAiError's str)
                click.echo(f"No answer: {m['error']['error']}")
            else:
                click.echo(_brief(m["content"]))
                if m["citations"]:
                    click.echo(
                        "Sources: " + ", ".join(c.get("title") or c["path"] for c in m["citations"])
                    )
                if m["checked"]:
                    click.echo(m["checked"])


def _brief(text: str, limit: int = EARLIER_CHARS) -> str:
    """``text`` cut at a word to about ``limit`` characters, "…" where cut."""
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(None, 1)[0].rstrip() + " …"


@main.command()
@click.option(
    "--session",
    "session_id",
    help="Reopen a saved chat session by its id; its last turns are printed first.",
)
@click.option("--corpus", metavar="NAME", help="Answer from this corpus only (kb-ai corpus list).")
@click.option("--model", help="Model for this chat (overrides KB_AI_MODEL and kb-ai.toml).")
@pass_context
@translate_errors
def chat(ctx: Context, session_id: str | None, corpus: str | None, model: str | None) -> None:
    """Ask questions in a loop; follow-ups can refer to earlier answers.

    Each follow-up is rewritten into a standalone question before pages are picked.
    The conversation is saved (see --session). End with Ctrl-D or an empty line.
    """
    from retrieval import ChatStore, check_question
    from wiki import open_state

    okb = _open(ctx, model)
    if corpus:
        from kb_ai.service import corpora

        corpora.corpus(okb, corpus)  # an unknown name lists the corpora, before any question
    llm = okb.open_llm()  # one client for the whole chat
    with closing(open_state(okb.kb)) as conn:
        store = ChatStore(conn)
        if session_id:
            session = store.get(session_id)
            _print_earlier(session)
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
                try:  # before a session is saved under it: an empty chat, titled by it
                    question = check_question(question)
                except UsageError as exc:
                    click.echo(f"Error: {exc}", err=True)
                    continue
                if session is None:
                    session = store.create(question)
                    click.echo(f"(chat {session['id']})", err=True)
                history = store.history(session["id"])
                notes: list[str] = []
                try:
                    answer = loop.run_until_complete(
                        _stream_answer(
                            okb,
                            question,
                            history=history,
                            llm=llm,
                            corpus=corpus,
                            as_json=False,
                            notes=notes,
                        )
                    )
                except (CliError, UsageError) as exc:
                    click.echo(f"Error: {exc}", err=True)
                    # kept as asked and failed, so that reopening the chat shows it so
                    from kb_ai.service import error_fields

                    failed = exc.error if isinstance(exc, CliError) else exc
                    store.keep_failed(session["id"], question, error_fields(failed), notes)
                    continue
                _print_sources(answer)
                # with what the chat page shows of it when reopened there
                store.keep_answer(session["id"], question, answer, notes)
        finally:
            loop.run_until_complete(llm.aclose())
            loop.close()
    if session is not None:
        click.echo(f"Saved as chat {session['id']}: kb-ai chat --session {session['id']}")
