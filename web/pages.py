"""The HTML pages: Wiki, Submit, Status, Chat. Server-rendered (Jinja2, autoescaped);
web/static/kb.js adds live updates, drag and drop and streaming where JavaScript runs,
and the forms work without it."""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from compiler.discover import TEXT_EXTENSIONS
from compiler.documents import DOCUMENT_EXTENSIONS, supported_types
from compiler.queue import TaskQueue
from kb_ai.errors import KbAiError, NotFoundError
from kb_ai.service import corpora
from kb_ai.service.evaluating import last_runs
from kb_ai.service.remote import remote_state
from web import content, csrf
from web.api import queue_submissions
from web.errors import status_for
from web.graph import link_graph
from web.originals import original
from web.people import chat_store, require, visitor
from web.render import render_markdown
from web.services import services
from web.templating import render
from web.uploads import page_form, read_submission

# The Submit page's list of the document types kb-ai reads, and its file picker's filter:
# what an upload compiles, text files by the one list of their suffixes (a zip's members,
# uploaded or on disk, are picked by it too) and documents.
ACCEPT = [*sorted(TEXT_EXTENSIONS), "text/*", *sorted(DOCUMENT_EXTENSIONS)]
TYPES = {"lines": supported_types(), "accept": ",".join(ACCEPT)}


def see(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


async def home(request: Request) -> Response:
    return see("/wiki")


async def wiki_index(request: Request) -> Response:
    svc = services(request)
    tree = await svc.run(content.wiki_tree, svc.kb)
    links = await svc.run(link_graph, svc.kb)
    return render(request, "wiki.html", tree=tree, graph=links, nav="wiki")


async def article(request: Request) -> Response:
    svc = services(request)
    path = request.path_params["path"]
    view = await svc.run(content.article_view, svc.kb, path)
    history = await svc.run(content.history_view, svc.kb, path)
    sha = request.query_params.get("sha")
    diff = await svc.run(content.diff_view, svc.kb, path, sha) if sha else None
    tree = await svc.run(content.wiki_tree, svc.kb)
    return render(
        request, "article.html", view=view, history=history, diff=diff, tree=tree, nav="wiki"
    )


async def source(request: Request) -> Response:
    svc = services(request)
    view = await svc.run(content.source_view, svc.kb, request.path_params["path"])
    return render(request, "source.html", view=view, nav="wiki")


async def submit(request: Request) -> Response:
    svc = services(request)
    if request.method == "GET":
        return render(request, "submit.html", types=TYPES, limits=svc.limits, nav="submit")
    require(request, "contributor")
    try:
        accepted, rejected = await read_submission(
            request, svc.limits, check_form=lambda form: csrf.check_form(request, form)
        )
        tasks = (
            await svc.run(queue_submissions, svc, svc.acting(request), accepted) if accepted else []
        )
    except KbAiError as exc:
        return render(
            request, "submit.html", status_for(exc), types=TYPES, limits=svc.limits,
            error=str(exc), nav="submit",
        )  # fmt: skip
    if not accepted:
        return render(request, "submit.html", 400, types=TYPES, limits=svc.limits,
                      rejected=rejected, nav="submit")  # fmt: skip
    await svc.audit(
        request, "submit", ", ".join(t["title"] for t in tasks), f"{len(tasks)} document(s)"
    )
    return see(f"/status?queued={len(tasks)}&rejected={len(rejected)}")


async def status(request: Request) -> Response:
    svc = services(request)
    q = request.query_params
    return render(
        request, "status.html", snap=await svc.run(content.queue_now, svc.kb), nav="status",
        queued=q.get("queued"), rejected=q.get("rejected"),
        remote=await svc.run(remote_state, svc.okb),
        evals=await svc.run(last_runs, svc.kb),
    )  # fmt: skip


async def task_action(request: Request) -> Response:
    svc = services(request)
    task_id, action = request.path_params["task_id"], request.path_params["action"]
    require(request, "contributor")
    await page_form(request)
    if action not in ("retry", "delete"):
        raise NotFoundError(f"No action {action!r}")

    def act() -> None:
        with svc.db() as conn:
            queue = TaskQueue(svc.kb, conn)
            if action == "retry":
                queue.retry(task_id)
            else:
                queue.delete(task_id)
        if action == "retry":
            svc.wake_workers()

    await svc.run(act)
    return see("/status")


async def chat(request: Request) -> Response:
    svc = services(request)
    sid = request.path_params.get("session_id")
    who = visitor(request)

    def load() -> tuple[list, dict | None]:
        with svc.db() as conn:
            store = chat_store(conn, who)
            session = store.get(sid) if sid else None
            for m in session["messages"] if session else []:
                if m["role"] == "assistant" and not m["error"]:  # a failed one has no text
                    m["html"] = render_markdown(m["content"])
            return store.list(), session

    sessions, session = await svc.run(load)
    tree = await svc.run(content.wiki_tree, svc.kb)
    found = await svc.run(corpora.corpora, svc.okb)  # the corpus choice beside the question
    return render(request, "chat.html", sessions=sessions, session=session, nav="chat",
                  empty=tree["count"] == 0, corpora=found)  # fmt: skip


async def session_action(request: Request) -> Response:
    svc = services(request)
    sid, action = request.path_params["session_id"], request.path_params["action"]
    form = await page_form(request)
    title = form.get("title")
    who = visitor(request)

    def act() -> None:
        with svc.db() as conn:
            store = chat_store(conn, who)
            if action == "rename":
                store.rename(sid, title if isinstance(title, str) else "")
            elif action == "delete":
                store.delete(sid)
            else:
                raise NotFoundError(f"No action {action!r}")

    await svc.run(act)
    return see("/chat" if action == "delete" else f"/chat/{quote(sid)}")


def routes() -> list[Route]:
    return [
        Route("/", home),
        Route("/wiki", wiki_index),
        Route("/wiki/{path:path}", article),
        Route("/sources/{path:path}", source),
        Route("/originals/{path:path}", original),
        Route("/submit", submit, methods=["GET", "POST"]),
        Route("/status", status),
        Route("/status/{task_id}/{action}", task_action, methods=["POST"]),
        Route("/chat", chat),
        Route("/chat/{session_id}", chat),
        Route("/chat/{session_id}/{action}", session_action, methods=["POST"]),
    ]
