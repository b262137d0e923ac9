"""The Jinja2 templates of the pages, and one function that renders a page with them:
below the pages and the error handlers, which both render."""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response
from starlette.templating import Jinja2Templates

from kb_ai.models import model_notice
from web.services import services

templates = Jinja2Templates(directory=Path(__file__).parent / "templates")


def render(request: Request, name: str, status: int = 200, **context: object) -> Response:
    if (
        context.get("nav") == "chat"
    ):  # where answers are read: say when they come from the tiny model
        context.setdefault("model_notice", model_notice(services(request).settings.model))
    return templates.TemplateResponse(request, name, context, status_code=status)


def error_page(request: Request, message: str, status: int) -> Response:
    return render(request, "error.html", status, message=message, code=status)
