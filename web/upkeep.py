"""Keeping the wiki true from the browser: delete a source, see the wiki's health,
review held compile runs.

The Delete button posts to ``/remove/raw/<slug>.md`` (a state-changing request, so the
guard's same-origin and token rules apply): what the source said leaves the wiki as with
`kb-ai rm`, in one commit. The Health page lists what `kb-ai lint` finds. The Review
page shows each run waiting on a review branch with its diff, and approves or rejects it
(POSTs, under the same rules); below the runs, the lessons agent sessions taught, each
with its confidence, to approve or reject the same way. Each of these forms carries the
page's CSRF field, checked before anything is done.
"""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from kb_ai.errors import NotFoundError
from kb_ai.service import compiling, learned, linting, reviewing
from web.people import require, visitor
from web.render import diff_lines
from web.services import services
from web.templating import render
from web.uploads import page_form


async def remove(request: Request) -> Response:
    require(request, "admin")
    await page_form(request)
    svc = services(request)
    rel = request.path_params["path"].strip().lstrip("/")
    if not rel.startswith("raw/") or not rel.endswith(".md"):
        raise NotFoundError(f"no source {rel}")
    address = request.client.host if request.client else ""
    result = await compiling.remove(
        svc.acting(request), [rel], reason="deleted in the web UI", address=address
    )
    gone = len(result.deleted)
    return RedirectResponse(
        f"/health?removed={quote(rel)}&deleted={gone}&rewritten={len(result.rewritten)}",
        status_code=303,
    )


async def health(request: Request) -> Response:
    svc = services(request)
    report = await svc.run(linting.lint, svc.acting(request))
    q = request.query_params
    return render(
        request, "health.html", report=report, nav="health",
        removed=q.get("removed"), deleted=q.get("deleted"), rewritten=q.get("rewritten"),
    )  # fmt: skip


async def reviews(request: Request) -> Response:
    svc = services(request)
    okb = svc.acting(request)
    who = visitor(request)

    def load() -> list[dict]:
        runs = []
        for r in reviewing.reviews(okb):
            articles = [
                c.as_dict() | {"lines": diff_lines(d)} for c, d in reviewing.articles(okb, r)
            ]
            own = who.actor is not None and who.actor.kind == "person"
            own = own and r.submitted_by == who.actor.name  # type: ignore[union-attr]
            runs.append(
                r.as_dict() | {"articles": articles, "held": reviewing.held(okb, r), "own": own}
            )
        return runs

    q = request.query_params
    return render(
        request, "review.html", runs=await svc.run(load), nav="review",
        self_approve=okb.settings.review_self_approve,
        done=q.get("done"), run=q.get("run"), waiting=q.get("waiting"),
        articles=q.get("articles"),
        lessons=await svc.run(learned.lessons, okb), lesson=q.get("lesson"),
        verdict=q.get("verdict"),
    )  # fmt: skip


async def lesson_action(request: Request) -> Response:
    """Approve or reject one lesson (a reviewer's verdict; the same as `kb-ai learned`)."""
    require(request, "reviewer")
    await page_form(request)
    svc = services(request)
    lesson_id, action = request.path_params["lesson"], request.path_params["action"]
    verbs = {"approve": learned.approve, "reject": learned.reject}
    if action not in verbs:
        raise NotFoundError(f"No action {action!r}")
    await svc.run(verbs[action], svc.acting(request), [lesson_id])
    await svc.audit(request, f"{action} lesson", lesson_id)
    verdict = {"approve": "approved", "reject": "rejected"}[action]
    return RedirectResponse(
        f"/review?lesson={quote(lesson_id)}&verdict={verdict}#lessons", status_code=303
    )


async def review_action(request: Request) -> Response:
    """Approve or reject a run, or the articles the form names (``article``, repeatable),
    with the form's ``comment``."""
    require(request, "reviewer")
    form = await page_form(request)
    svc = services(request)
    run, action = request.path_params["run"], request.path_params["action"]
    okb, waiting = svc.acting(request), ""
    articles = [str(a) for a in form.getlist("article") if str(a).strip()]
    comment = str(form.get("comment") or "")
    address = request.client.host if request.client else ""
    decided = {"articles": articles, "comment": comment, "address": address}
    if action == "approve":
        await svc.run(reviewing.approve, okb, run, **decided)
    elif action == "reject":
        rejection = await svc.run(reviewing.reject, okb, run, **decided)
        if rejection is not None:  # submissions left to retry on Status
            waiting = f"&waiting={len(rejection.tasks)}"
    else:
        raise NotFoundError(f"No action {action!r}")
    done = {"approve": "approved", "reject": "rejected"}[action]
    which = f"&articles={quote(', '.join(articles))}" if articles else ""
    return RedirectResponse(
        f"/review?done={done}&run={quote(run)}{which}{waiting}", status_code=303
    )


def routes() -> list[Route]:
    return [
        Route("/review", reviews),
        Route("/learned/{lesson}/{action}", lesson_action, methods=["POST"]),
        Route("/review/{run}/{action}", review_action, methods=["POST"]),
        Route("/remove/{path:path}", remove, methods=["POST"]),
        Route("/health", health),
    ]
