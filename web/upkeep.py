"""Keeping the wiki true from the browser: delete a source, see the wiki's health.

The Delete button posts to ``/remove/raw/<slug>.md`` (a state-changing request, so the
guard's same-origin and token rules apply): what the source said leaves the wiki as with
`kb-ai rm`, in one commit. The Health page lists what `kb-ai lint` finds.
"""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from compiler.removal import find_sources, remove_sources
from kb_ai.errors import NotFoundError
from web.services import services
from web.templating import render
from wiki.repair import lint_and_fix


async def remove(request: Request) -> Response:
    svc = services(request)
    rel = request.path_params["path"].strip().lstrip("/")
    if not rel.startswith("raw/") or not rel.endswith(".md"):
        raise NotFoundError(f"no source {rel}")
    found = await svc.run(find_sources, svc.kb, [rel])
    result = await remove_sources(
        svc.kb, svc.settings, found, reason="deleted in the web UI", llm_factory=svc.llm_factory
    )
    gone = len(result.deleted)
    return RedirectResponse(
        f"/health?removed={quote(rel)}&deleted={gone}&rewritten={len(result.rewritten)}",
        status_code=303,
    )


async def health(request: Request) -> Response:
    svc = services(request)
    report = await svc.run(lint_and_fix, svc.kb)
    q = request.query_params
    return render(
        request, "health.html", report=report, nav="health",
        removed=q.get("removed"), deleted=q.get("deleted"), rewritten=q.get("rewritten"),
    )  # fmt: skip


def routes() -> list[Route]:
    return [
        Route("/remove/{path:path}", remove, methods=["POST"]),
        Route("/health", health),
    ]
