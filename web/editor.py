"""The browser's editor: /edit/<type>/<slug>.md shows an article's file (frontmatter and
Markdown) in a textarea, previews it, and saves it as one commit by the request's actor
(kb_ai/service/editing.py, wiki/editing.py). The form carries the CSRF field like every page form, and the blob
id of the version it loaded: a save over a file that changed since is a conflict (409)
that shows the other version and keeps the person's text."""

from __future__ import annotations

import difflib
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from kb_ai.errors import EditConflictError, UsageError
from kb_ai.service import editing
from web import content, csrf
from web.errors import status_for
from web.people import needs
from web.render import article_url, diff_lines, render_markdown
from web.services import services
from web.templating import render
from web.uploads import limit_body
from wiki import KnowledgeBase, read_article
from wiki.editing import check_edit, normalise_text
from wiki.hand_edits import blob_id


def _loaded(kb: KnowledgeBase, raw_path: str) -> dict[str, Any]:
    path = content.article_path(raw_path)
    article = read_article(kb, path)
    text = kb.resolve(article.path, under="wiki").read_text(encoding="utf-8")
    return {"path": article.path, "title": article.title, "text": text, "base": blob_id(text)}


@needs("contributor")
async def edit(request: Request) -> Response:
    svc = services(request)
    raw = request.path_params["path"]
    if request.method == "GET":
        loaded = await svc.run(_loaded, svc.kb, raw)
        return render(request, "edit.html", nav="wiki", **loaded, message="")
    form = await limit_body(request, svc.limits.max_json_bytes, "a shorter article").form()
    csrf.check_form(request, form)  # before anything is read or written
    loaded = await svc.run(_loaded, svc.kb, raw)
    text = normalise_text(str(form.get("text") or ""))
    base = str(form.get("base") or "")
    message = str(form.get("message") or "")
    page = {**loaded, "text": text, "base": base, "message": message}
    if form.get("action") == "preview":
        try:
            article = check_edit(loaded["path"], text, read_article(svc.kb, loaded["path"]))
        except UsageError as exc:
            return render(request, "edit.html", 400, nav="wiki", **page, error=str(exc))
        html = render_markdown(article.body, base=article.path)
        return render(request, "edit.html", nav="wiki", **page, preview=html)
    try:
        sha = await svc.run(
            editing.save, svc.acting(request), loaded["path"], text, base=base, message=message
        )
    except EditConflictError as exc:
        theirs = loaded["text"]
        diff = "\n".join(
            difflib.unified_diff(
                theirs.splitlines(), text.splitlines(), "saved meanwhile", "your text",
                lineterm="",
            )
        )  # fmt: skip
        # Saving again, after merging by hand, is over the version now shown.
        page |= {"base": loaded["base"], "conflict": theirs, "lines": diff_lines(diff)}
        return render(request, "edit.html", 409, nav="wiki", **page, error=str(exc))
    except UsageError as exc:
        return render(request, "edit.html", status_for(exc), nav="wiki", **page, error=str(exc))
    await svc.audit(request, "edit", loaded["path"], message)
    url = article_url(loaded["path"]) + (f"?sha={sha}#diff" if sha else "")
    return RedirectResponse(url, status_code=303)


def routes() -> list[Route]:
    return [Route("/edit/{path:path}", edit, methods=["GET", "POST"])]
