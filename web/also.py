"""Pages of the other knowledge bases (``also``) as this server shows them: read only,
at /also/<name>/wiki/<type>/<slug>.md, where the answers' citations of them lead."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from kb_ai.errors import NotFoundError
from kb_ai.service.also import open_shelves
from web import content
from web.services import services
from web.templating import render


async def also_article(request: Request) -> Response:
    svc = services(request)
    name, rel = request.path_params["name"], "wiki/" + request.path_params["path"]
    opened = await svc.run(open_shelves, svc.okb)
    shelf = next((s for s in opened.shelves if s.name == name), None)
    if shelf is None:
        known = ", ".join(s.name for s in opened.shelves) or "none"
        raise NotFoundError(
            f"No other knowledge base {name!r} (also: {known})", hint="see also in kb-ai.toml"
        )
    view = await svc.run(content.article_view, shelf.kb, rel)
    # its links lead to its own pages here, not to this knowledge base's of the same path
    html = view["html"].replace('href="/wiki/', f'href="/also/{name}/wiki/')
    return render(request, "also_article.html", view=view, html=html, kb_name=name, nav="wiki")


def routes() -> list[Route]:
    return [Route("/also/{name}/wiki/{path:path}", also_article)]
