"""Server-sent event streams: the task queue as it changes, and answers as they are written.

An answer is produced by a task of its own, not by the response: a client that goes away
mid-stream stops receiving, but the answer is still finished and saved to its chat
session, so reopening the session shows it. Nothing a user asked is lost to a dropped
connection, nor to the server stopping (SIGTERM): an open answer stream then ends with
an ``error`` event in the one error shape, and the question is kept in its session.
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

from compiler.queue import TaskQueue
from kb_ai.errors import LLMError, StorageError, UsageError
from retrieval import Asker, ChatStore, Turn
from web import content
from web.errors import error_body
from web.render import render_markdown
from web.services import Services, services
from web.uploads import json_object

log = logging.getLogger(__name__)
PING_SECONDS = 15
#: How long an answer stream has, once the server is stopping, to send its last event.
SHUTDOWN_GRACE_SECONDS = 2.0
STOPPING = "the server is stopping before the answer is done: ask it again when the server is back"
KEPT = " (the question is kept in its chat session)"


async def task_stream(request: Request) -> EventSourceResponse:
    """``tasks`` events: the whole queue (newest 200) and its counts, whenever it changes."""
    svc = services(request)

    def snapshot() -> dict[str, Any]:
        with svc.db() as conn:
            return content.queue_snapshot(TaskQueue(svc.kb, conn))

    async def events() -> AsyncIterator[JSONServerSentEvent]:
        last = None
        while True:
            try:
                snap = await svc.run(snapshot)
            except StorageError as exc:  # said, in the one shape; the stream goes on
                data = error_body(str(exc), 503, kind=type(exc).__name__)
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

    Body: ``{"question", "session": id or null, "save": true, "paths": [...] or null}``.
    With no session and ``save`` true (the default) a session is created, titled by the
    question; its id is in the ``X-Session-Id`` header and in the ``done`` event.
    """
    svc = services(request)
    body = await json_object(request, example='{"question": "..."}')
    question, sid, paths = body.get("question"), body.get("session"), body.get("paths")
    if not isinstance(question, str) or not question.strip():
        raise UsageError("The question is empty", hint='send {"question": "..."}')
    if sid is not None and not isinstance(sid, str):
        raise UsageError('"session" must be a session id')
    if paths is not None and (
        not isinstance(paths, list) or not all(isinstance(p, str) for p in paths)
    ):
        raise UsageError('"paths" must be a list of article paths')
    llm = svc.chat_llm()  # a missing model is a 400 here, before any event
    history, created = await svc.run(_open_session, svc, sid, question, body.get("save", True))
    sid = created["id"] if created else sid
    events: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
    producer = asyncio.create_task(_answer(svc, llm, question, history, paths, sid, events))
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
    svc: Services, sid: str | None, question: str, save: bool
) -> tuple[list[Turn], dict[str, Any] | None]:
    """(history, the session created for this question, if one was)."""
    with svc.db() as conn:
        store = ChatStore(conn)
        if sid:
            return store.history(sid), None
        if save:
            return [], store.create(question)
        return [], None


async def _answer(
    svc: Services,
    llm: Any,
    question: str,
    history: list[Turn],
    paths: list[str] | None,
    sid: str | None,
    out: asyncio.Queue,
) -> None:
    answered = False  # saved with its answer
    try:
        asker = Asker(svc.kb, svc.settings, llm)
        async for event in asker.events(question, history=history, paths=paths or None):
            data = dict(event.data)
            if event.type == "done":
                data["html"] = render_markdown(data["answer"])
                if sid:
                    await svc.run(_save, svc, sid, question, data)
                    answered = True
            if event.type in ("done", "error"):
                data["session"] = sid
            if isinstance(event.error, LLMError):  # incl. an open breaker and a failed selection
                svc.drop_chat_llm(llm)
            await out.put({"type": event.type, "data": data})
    except asyncio.CancelledError:  # the server is stopping: the question stays asked
        if sid and not answered:
            try:
                _save_question(svc, sid, question)
            except StorageError as exc:
                log.warning("could not keep the question in chat session %s: %s", sid, exc)
        raise
    except StorageError as exc:  # the one line that says what to do, in the one shape
        data = error_body(str(exc), 503, kind=type(exc).__name__, session=sid)
        await out.put({"type": "error", "data": data})
    except Exception as exc:  # tell the reader the answer broke off, then let it surface
        error = {"error": "the server failed while answering", "kind": type(exc).__name__}
        await out.put({"type": "error", "data": {**error, "session": sid}})
        raise
    finally:
        out.put_nowait(None)


def _save_question(svc: Services, sid: str, question: str) -> None:
    """Keep a question that was not answered (the server stopped meanwhile)."""
    with svc.db() as conn:
        ChatStore(conn).append(sid, "user", question)


def _save(svc: Services, sid: str, question: str, done: dict[str, Any]) -> None:
    with svc.db() as conn:
        store = ChatStore(conn)
        store.append(sid, "user", question)
        store.append(sid, "assistant", done["answer"], done["citations"])
