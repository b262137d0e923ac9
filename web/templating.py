"""The Jinja2 templates of the pages, and one function that renders a page with them:
below the pages and the error handlers, which both render."""

from __future__ import annotations

from pathlib import Path

import jinja2
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import Response
from starlette.templating import Jinja2Templates

from kb_ai.models import model_notice
from web import csrf
from web.people import may, visitor
from web.render import render_inline
from web.services import services
from wiki import visible_text


def _visible(value: object) -> object:
    """Every value a template prints, without invisible controls (a second lock: titles
    are cleaned where they are read, see wiki.one_line)."""
    if isinstance(value, Markup):
        return Markup(visible_text(str(value)))  # safe already; deleting characters adds no markup
    return visible_text(value) if isinstance(value, str) else value


# Every page carries the CSRF token its forms and scripts send back (web/csrf.py).
templates = Jinja2Templates(
    env=jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=jinja2.select_autoescape(),
        finalize=_visible,
    ),
    # ``may(role)``: whether the visitor's role allows it, so pages show only what they may use
    context_processors=[
        lambda request: {
            "csrf_token": csrf.token_of(request),
            "may": lambda role: may(request, role),
            "visitor": visitor(request),
        }
    ],
)
templates.env.filters["inline_md"] = lambda text: Markup(render_inline(str(text)))


def render(request: Request, name: str, status: int = 200, **context: object) -> Response:
    if (
        context.get("nav") == "chat"
    ):  # where answers are read: say when they come from the tiny model
        context.setdefault("model_notice", model_notice(services(request).settings.model))
    return templates.TemplateResponse(request, name, context, status_code=status)


def error_page(request: Request, message: str, status: int) -> Response:
    return render(request, "error.html", status, message=message, code=status)
