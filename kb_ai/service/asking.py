"""Ask through the application layer: the question checked once, a model client opened
for the knowledge base (or the caller's shared one), typed events back.

The events (retrieval/answer.py: Status, Note, Delta, Done, Error) stay objects until an
edge prints or sends them: the CLI as text or ``--json``, the web app as server-sent
events, the MCP server as tool content.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing

from kb_ai.errors import KbAiError, UsageError
from kb_ai.llm import LLM, calling_as
from kb_ai.service import also, corpora
from kb_ai.service.opened import OpenKb
from retrieval import Answer, Asker, AskEvent, Done, Error, Note, Turn, check_question


async def ask_events(
    okb: OpenKb,
    question: str,
    *,
    history: Sequence[Turn] = (),
    paths: Sequence[str] | None = None,
    llm: LLM | None = None,
    corpus: str | None = None,
) -> AsyncIterator[AskEvent]:
    """The events of answering ``question``, ending with Done or Error.

    ``llm``: a client the caller keeps (the web app shares one across chats); without
    it one is opened for this question and closed at its end. A missing model is an
    Error event, like any other failure; a bad question raises at once (UsageError),
    before anything is opened, and so does an unknown ``corpus`` (NotFoundError listing
    the corpora) or a corpus named with ``paths``.

    ``corpus``: answer from that corpus's articles only (kb_ai/service/corpora.py).
    """
    question = check_question(question)
    scope = None
    if corpus:
        if paths:
            raise UsageError(
                "Ask from a corpus or from named pages, not both",
                hint="leave out the pages, or the corpus",
            )
        scope = await asyncio.to_thread(corpora.scope, okb, corpus)
    okb.note("ask", question[:80] + (f" (corpus {corpus})" if corpus else ""))
    # the other knowledge bases (also), not for a corpus: it is this one's slice
    shelves = (
        None if scope or not okb.settings.also else await asyncio.to_thread(also.open_shelves, okb)
    )
    for said in shelves.notes if shelves else []:
        yield Note(said)
    own = llm is None
    try:
        client = okb.open_llm() if llm is None else llm
    except KbAiError as exc:
        yield Error(exc)
        return
    try:
        asker = Asker(okb.kb, okb.settings, client, scope, shelves.shelves if shelves else ())
        # the local model serves the people asking in turn (kb_ai/llm/_turns.py)
        with calling_as(okb.actor.name):
            async with aclosing(asker.events(question, history=history, paths=paths)) as events:
                async for event in events:
                    yield event
    finally:
        if own and (aclose := getattr(client, "aclose", None)) is not None:
            await aclose()  # the LLM protocol does not require it


async def ask(
    okb: OpenKb,
    question: str,
    *,
    history: Sequence[Turn] = (),
    paths: Sequence[str] | None = None,
    llm: LLM | None = None,
    corpus: str | None = None,
) -> Answer:
    """The answer to ``question``; raises the KbAiError an Error event would carry."""
    events = ask_events(okb, question, history=history, paths=paths, llm=llm, corpus=corpus)
    async with aclosing(events) as ev:
        async for event in ev:
            if isinstance(event, Done):
                return event.answer
            if isinstance(event, Error):
                raise event.error
    raise KbAiError("the answer ended without a result")
