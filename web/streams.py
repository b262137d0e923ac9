"""Server-sent event streams: the task queue as it changes, and answers as they are written.

An answer is produced by a task of its own, not by the response: a client that goes away
mid-stream stops receiving, but the answer is still finished and saved to its chat
session, so reopening the session shows it. Nothing a user asked is lost to a dropped
connection, nor to the server stopping (SIGTERM): an open answer stream then ends with
an ``error`` event in the one error shape, and the question is kept in its session. An
answer that fails (the model timed out, the breaker is open...) is kept too, as the
question and a failed entry with that error, so reopening the session shows it failed.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import anyio
from sse_starlette import EventSourceResponse, JSONServerSentEvent
from starlette.requests import Request

from kb_ai.errors import LLMError, StorageError, UsageError
from kb_ai.service import OpenKb, corpora, error_body, error_fields
from kb_ai.service.asking import ask_events
from retrieval import Answer, AskEvent, Done, Error, Note, Turn, check_question
from web import content
from web.people import Visitor, chat_store, visitor
from web.render import render_markdown
from web.services import Services, services
from web.uploads import json_object

log = logging.getLogger(__name__)
PING_SECONDS = 15
#: How long an answer stream has, once the server is stopping, to send its last event.
SHUTDOWN_GRACE_SECONDS = 2.0
STOPPING = "the server is stopping before the answer is done: ask it again when the server is back"
KEPT = " (the question is kept in its chat session)"
BROKE = "the server failed while answering"


async def task_stream(request: Request) -> EventSourceResponse:
    """``tasks`` events: the whole queue (newest 200) and its counts, whenever it changes."""
    svc = services(request)

    async def events() -> AsyncIterator[JSONServerSentEvent]:
        last = None
        while True:
            try:
                snap = await svc.run(content.queue_now, svc.kb)
            except StorageError as exc:  # said, in the one shape; the stream goes on
                data = error_fields(exc)
                if last != data["error"]:
                    last = data["error"]
                    yield JSONServerSentEvent(data, event="error")
                await asyncio.sleep(max(svc.status_interval, 1.0))
                continue
            key = json.dumps(snap, sort_keys=True)
            if key != last:
                last = key
                yield JSONServerSentEvent(snap, event="tasks")
            await asyncio.sleep(svc.status_interval)

    return EventSourceResponse(events(), ping=PING_SECONDS)


async def ask_stream(request: Request) -> EventSourceResponse:
    """Answer a question as ``status``, ``delta``, then ``done`` (or ``error``) events.
    An ``error`` event carries kb-ai's one error shape (as the JSON API's errors), with
    the session and the model use so far.

    Body: ``{"question", "session": id or null, "save": true, "paths": [...] or null,
    "corpus": name or null}``; an unknown corpus is a 404 listing the corpora.
    With no session and ``save`` true (the default) a session is created, titled by the
    question; its id is in the ``X-Session-Id`` header and in the ``done`` event.
    """
    svc = services(request)
    body = await json_object(request, example='{"question": "..."}')
    question, sid, paths = body.get("question"), body.get("session"), body.get("paths")
    question = check_question(question)
    svc.questions.take(visitor(request).name)  # one person's share of the model
    if sid is not None and not isinstance(sid, str):
        raise UsageError('"session" must be a session id')
    if paths is not None and (
        not isinstance(paths, list) or not all(isinstance(p, str) for p in paths)
    ):
        raise UsageError('"paths" must be a list of article paths')
    corpus = body.get("corpus") or None
    if corpus is not None:
        if not isinstance(corpus, str):
            raise UsageError('"corpus" must be the name of a corpus')
        await svc.run(corpora.corpus, svc.acting(request), corpus)  # unknown: 404 with the list
    llm = svc.chat_llm()  # a missing model is a 400 here, before any event
    who = visitor(request)
    history, created = await svc.run(_open_session, svc, who, sid, question, body.get("save", True))
    sid = created["id"] if created else sid
    events: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
    okb = svc.acting(request)
    producer = asyncio.create_task(
        _answer(svc, who, okb, llm, question, history, paths, sid, events, corpus)
    )
    svc.keep(producer)
    shutdown = anyio.Event()  # set by sse-starlette when the server is stopping

    async def relay() -> AsyncIterator[JSONServerSentEvent]:
        stopping = asyncio.ensure_future(shutdown.wait())
        try:
            while True:
                following = asyncio.ensure_future(events.get())
                await asyncio.wait({following, stopping}, return_when=asyncio.FIRST_COMPLETED)
                if not following.done():  # the server stops before the answer is done
                    following.cancel()
                    said = STOPPING + (KEPT if sid else "")
                    data = error_body(said, 503, kind="ServerStopping", session=sid)
                    yield JSONServerSentEvent(data, event="error")
                    return
                if (event := following.result()) is None:
                    return
                yield JSONServerSentEvent(event["data"], event=event["type"])
        finally:
            stopping.cancel()

    headers = {"X-Session-Id": sid} if sid else {}
    if created:  # the page lists the new chat at once (percent-encoded: headers are latin-1)
        headers["X-Session-Title"] = quote(created["title"], safe="")
    return EventSourceResponse(
        relay(),
        ping=PING_SECONDS,
        headers=headers,
        shutdown_event=shutdown,
        shutdown_grace_period=SHUTDOWN_GRACE_SECONDS,
    )


def _open_session(
    svc: Services, who: Visitor, sid: str | None, question: str, save: bool
) -> tuple[list[Turn], dict[str, Any] | None]:
    """(history, the session created for this question, if one was): ``who``'s own
    session (another's is not found), or a new one of theirs."""
    with svc.db() as conn:
        store = chat_store(conn, who)
        if sid:
            return store.history(sid), None
        if save:
            return [], store.create(question)
        return [], None


async def _answer(
    svc: Services,
    who: Visitor,
    okb: OpenKb,
    llm: Any,
    question: str,
    history: list[Turn],
    paths: list[str] | None,
    sid: str | None,
    out: asyncio.Queue,
    corpus: str | None = None,
) -> None:
    saved = False  # the question is kept, with its answer or its failure
    notes: list[str] = []  # shown above the answer, and kept with it
    try:
        events = ask_events(
            okb, question, history=history, paths=paths or None, llm=llm, corpus=corpus
        )
        async for event in events:
            if isinstance(event, Note):
                notes.append(event.text)
            if isinstance(event, Done) and sid:
                await svc.run(_save, svc, who, sid, question, event.answer, notes)
                saved = True
            if isinstance(event, Error) and isinstance(event.error, LLMError):
                svc.drop_chat_llm(llm)  # incl. an open breaker and a failed selection
            data = event_data(event, sid)
            if isinstance(event, Error) and sid and not saved:  # the reader hears this error
                await svc.run(_keep_failed, svc, who, sid, question, data, notes)
                saved = True
            await out.put({"type": event.type, "data": data})
    except asyncio.CancelledError:  # the server is stopping: the question stays asked
        if sid and not saved:
            said = error_body(STOPPING + KEPT, 503, kind="ServerStopping")
            _keep_failed(svc, who, sid, question, said, notes)
        raise
    except StorageError as exc:  # the one line that says what to do, in the one shape
        data = {**error_fields(exc), "session": sid}
        if sid and not saved:
            await svc.run(_keep_failed, svc, who, sid, question, data, notes)
        await out.put({"type": "error", "data": data})
    except Exception as exc:  # tell the reader the answer broke off, then let it surface
        broke = {**error_body(BROKE, 500, kind=type(exc).__name__), "session": sid}
        if sid and not saved:
            await svc.run(_keep_failed, svc, who, sid, question, broke, notes)
        await out.put({"type": "error", "data": broke})
        raise
    finally:
        out.put_nowait(None)


def event_data(event: AskEvent, sid: str | None) -> dict[str, Any]:
    """An answer's event as its server-sent event's data: the answer with its HTML and
    session, an error in the one error shape with the session and the model use."""
    if isinstance(event, Error):
        return {**error_fields(event.error), "usage": event.usage.as_dict(), "session": sid}
    data = event.as_dict()
    if isinstance(event, Done):
        html = render_markdown(event.answer.answer)
        data |= {"html": html, "session": sid, "checked": event.answer.checked}
    return data


def _keep_failed(
    svc: Services, who: Visitor, sid: str, question: str, error: dict, notes: list[str]
) -> None:
    """Keep a question whose answer failed, and the failure (its error as the ``error``
    event carried it), so that reopening the session shows that it failed; where the
    database may be what failed, a failure to keep it is logged (the reader is told the
    first error)."""
    try:
        with svc.db() as conn:
            chat_store(conn, who).keep_failed(sid, question, error, notes)
    except StorageError as exc:
        log.warning("could not keep the question in chat session %s: %s", sid, exc)


def _save(
    svc: Services, who: Visitor, sid: str, question: str, answer: Answer, notes: list[str]
) -> None:
    """Keep the question and its answer with what the page showed beside it (sources,
    the "Cited claims" line, the notes), so that reopening the session shows it so."""
    with svc.db() as conn:
        chat_store(conn, who).keep_answer(sid, question, answer, notes)
