"""Keeping the wiki true from the browser: delete a source, see the wiki's health,
review held compile runs.

The Delete button posts to ``/remove/raw/<slug>.md`` (a state-changing request, so the
guard's same-origin and token rules apply): what the source said leaves the wiki as with
`kb-ai rm`, in one commit. The Health page lists what `kb-ai lint` finds. The Review
page shows each run waiting on a review branch with its diff, and approves or rejects it
(POSTs, under the same rules). Each of these forms carries the page's CSRF field, checked
before anything is done.
"""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from compiler.removal import find_sources, remove_sources
from compiler.review import (
    approve_review,
    held_versions,
    list_reviews,
    reject_review,
    review_diff,
    waiting_hand_edits,
)
from kb_ai.errors import NotFoundError
from web.render import diff_lines
from web.services import services
from web.templating import render
from web.uploads import page_form
from wiki.repair import lint_and_fix


async def remove(request: Request) -> Response:
    await page_form(request)
    svc = services(request)
    rel = request.path_params["path"].strip().lstrip("/")
    if not rel.startswith("raw/") or not rel.endswith(".md"):
        raise NotFoundError(f"no source {rel}")
    found = await svc.run(find_sources, svc.kb, [rel])
    result = await remove_sources(
        svc.kb,
        svc.settings,
        found,
        reason="deleted in the web UI",
        llm_factory=svc.llm_factory,
        started_by="web",
    )
    gone = len(result.deleted)
    return RedirectResponse(
        f"/health?removed={quote(rel)}&deleted={gone}&rewritten={len(result.rewritten)}",
        status_code=303,
    )


async def health(request: Request) -> Response:
    svc = services(request)
    report = await svc.run(lint_and_fix, svc.kb)
    report.findings += await svc.run(waiting_hand_edits, svc.kb)
    q = request.query_params
    return render(
        request, "health.html", report=report, nav="health",
        removed=q.get("removed"), deleted=q.get("deleted"), rewritten=q.get("rewritten"),
    )  # fmt: skip


async def reviews(request: Request) -> Response:
    svc = services(request)

    def load() -> list[dict]:
        return [
            r.as_dict()
            | {"lines": diff_lines(review_diff(svc.kb, r.run)), "held": held_versions(svc.kb, r)}
            for r in list_reviews(svc.kb)
        ]

    q = request.query_params
    return render(
        request, "review.html", runs=await svc.run(load), nav="review",
        done=q.get("done"), run=q.get("run"), waiting=q.get("waiting"),
    )  # fmt: skip


async def review_action(request: Request) -> Response:
    await page_form(request)
    svc = services(request)
    run, action = request.path_params["run"], request.path_params["action"]
    waiting = ""
    if action == "approve":
        await svc.run(approve_review, svc.kb, run)
    elif action == "reject":
        rejection = await svc.run(reject_review, svc.kb, run)
        waiting = f"&waiting={len(rejection.tasks)}"  # submissions left to retry on Status
    else:
        raise NotFoundError(f"No action {action!r}")
    done = {"approve": "approved", "reject": "rejected"}[action]
    return RedirectResponse(f"/review?done={done}&run={quote(run)}{waiting}", status_code=303)


def routes() -> list[Route]:
    return [
        Route("/review", reviews),
        Route("/review/{run}/{action}", review_action, methods=["POST"]),
        Route("/remove/{path:path}", remove, methods=["POST"]),
        Route("/health", health),
    ]
