"""The JSON API under /api: everything the pages do. Errors use the one shape of
web/errors.py; the streams (task updates, answers) live in web/streams.py."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from compiler.identity_index import check_source_id
from compiler.queue import TaskQueue
from kb_ai.errors import UsageError
from kb_ai.service import OpenKb, submitting
from kb_ai.service.submitting import Document
from web import content
from web.errors import error_json
from web.people import Visitor, chat_store, needs, require, visitor
from web.services import Services, services
from web.streams import ask_stream, task_stream
from web.uploads import Submission, fetch_submission, json_object, read_submission


def ok(status: int = 200, **data: Any) -> JSONResponse:
    return JSONResponse({"ok": True, **data}, status_code=status)


# -- the queue (/healthz is in web/health.py) -------------------------------------------


def queue_submissions(svc: Services, okb: OpenKb, items: list[Submission]) -> list[dict[str, Any]]:
    """Spool and record each submission as ``okb``'s actor (the author of the commit that
    compiles it); returns the tasks, duplicates marked."""
    for item in items:  # an id that names no source is refused before anything is queued
        if item.revises:
            check_source_id(svc.kb, item.revises)
    items = [fetch_submission(i, svc.settings) if i.url else i for i in items]
    documents = [
        Document(
            i.title,
            i.content,
            filename=i.filename,
            kind=i.kind,
            origin=i.url or None,
            revises=i.revises,
        )  # fmt: skip
        for i in items
    ]
    out = [
        {**content.public_task(task), "duplicate": not created}
        for task, created in submitting.submit(okb, documents)
    ]
    svc.wake_workers()
    return out


@needs("contributor")
async def submit(request: Request) -> JSONResponse:
    """202 once every accepted document is on disk and in the task table."""
    svc = services(request)
    accepted, rejected = await read_submission(request, svc.limits)
    if not accepted:
        status = 413 if all(r["too_large"] for r in rejected) else 400
        first = rejected[0]["error"]
        more = f" (and {len(rejected) - 1} more)" if len(rejected) > 1 else ""
        return error_json(f"Nothing was queued: {first}{more}", status, rejected=rejected)
    tasks = await svc.run(queue_submissions, svc, svc.acting(request), accepted)
    await svc.audit(
        request, "submit", ", ".join(t["title"] for t in tasks), f"{len(tasks)} document(s)"
    )
    return ok(202, tasks=tasks, rejected=rejected)


async def tasks(request: Request) -> JSONResponse:
    svc = services(request)
    return ok(**await svc.run(content.queue_now, svc.kb))


def _task_action(svc: Services, task_id: str, action: str) -> dict[str, Any] | None:
    with svc.db() as conn:
        queue = TaskQueue(svc.kb, conn)
        if action == "retry":
            task = content.public_task(queue.retry(task_id))
            svc.wake_workers()
            return task
        if action == "delete":
            queue.delete(task_id)
            return None
        return content.public_task(queue.get(task_id))


async def task(request: Request) -> JSONResponse:
    svc = services(request)
    task_id = request.path_params["task_id"]
    if request.method == "DELETE":
        require(request, "contributor")
        await svc.run(_task_action, svc, task_id, "delete")
        return ok(deleted=task_id)
    return ok(task=await svc.run(_task_action, svc, task_id, "get"))


@needs("contributor")
async def retry(request: Request) -> JSONResponse:
    svc = services(request)
    return ok(task=await svc.run(_task_action, svc, request.path_params["task_id"], "retry"))


# -- the wiki -------------------------------------------------------------------------------


async def wiki_tree(request: Request) -> JSONResponse:
    svc = services(request)
    return ok(**await svc.run(content.wiki_tree, svc.kb))


async def article(request: Request) -> JSONResponse:
    svc = services(request)
    return ok(**await svc.run(content.article_view, svc.kb, request.query_params.get("path", "")))


async def history(request: Request) -> JSONResponse:
    svc = services(request)
    path = request.query_params.get("path", "")
    return ok(path=content.article_path(path),
              history=await svc.run(content.history_view, svc.kb, path))  # fmt: skip


async def diff(request: Request) -> JSONResponse:
    svc = services(request)
    q = request.query_params
    view = await svc.run(content.diff_view, svc.kb, q.get("path", ""), q.get("sha", ""))
    view.pop("lines")
    return ok(**view)


async def source(request: Request) -> JSONResponse:
    svc = services(request)
    return ok(**await svc.run(content.source_view, svc.kb, request.query_params.get("path", "")))


# -- chat sessions --------------------------------------------------------------------------


def _sessions(svc: Services, who: Visitor, action: str, sid: str = "", title: str = "") -> Any:
    with svc.db() as conn:
        store = chat_store(conn, who)
        if action == "list":
            return store.list()
        if action == "create":
            return store.create(title or "New chat")
        if action == "rename":
            return store.rename(sid, title)
        if action == "delete":
            return store.delete(sid)
        return store.get(sid)


async def sessions(request: Request) -> JSONResponse:
    svc = services(request)
    if request.method == "POST":
        body = await json_object(request)
        title = body.get("title") or "New chat"
        if not isinstance(title, str):
            raise UsageError('"title" must be a string')
        return ok(
            201, session=await svc.run(_sessions, svc, visitor(request), "create", title=title)
        )
    return ok(sessions=await svc.run(_sessions, svc, visitor(request), "list"))


async def session(request: Request) -> JSONResponse:
    svc = services(request)
    sid = request.path_params["session_id"]
    if request.method == "DELETE":
        await svc.run(_sessions, svc, visitor(request), "delete", sid)
        return ok(deleted=sid)
    if request.method == "PATCH":
        title = (await json_object(request)).get("title")
        if not isinstance(title, str):
            raise UsageError('Send {"title": "..."} to rename a session')
        return ok(session=await svc.run(_sessions, svc, visitor(request), "rename", sid, title))
    return ok(session=await svc.run(_sessions, svc, visitor(request), "get", sid))


def routes() -> list[Route]:
    return [
        Route("/api/submit", submit, methods=["POST"]),
        Route("/api/tasks", tasks),
        Route("/api/tasks/events", task_stream),
        Route("/api/tasks/{task_id}", task, methods=["GET", "DELETE"]),
        Route("/api/tasks/{task_id}/retry", retry, methods=["POST"]),
        Route("/api/wiki", wiki_tree),
        Route("/api/article", article),
        Route("/api/history", history),
        Route("/api/diff", diff),
        Route("/api/source", source),
        Route("/api/ask", ask_stream, methods=["POST"]),
        Route("/api/sessions", sessions, methods=["GET", "POST"]),
        Route("/api/sessions/{session_id}", session, methods=["GET", "PATCH", "DELETE"]),
    ]
