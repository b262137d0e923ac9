"""The sign-in page: a person pastes their token and gets a signed session cookie
(web/sessions.py) instead; failed tries are slowed per address and audited."""

from __future__ import annotations

import math

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from web.auth import TOO_MANY
from web.services import services
from web.templating import render
from web.uploads import page_form


async def login(request: Request) -> Response:
    if request.method == "GET":
        return render(request, "login.html", nav="login")
    form = await page_form(request)  # the page's CSRF field first, as every page form
    state = request.app.state
    address = request.client.host if request.client else ""
    wait = state.throttle.wait(address)
    if wait > 0:
        response = render(request, "login.html", 429, nav="login", error=TOO_MANY)
        response.headers["retry-after"] = str(math.ceil(wait))
        return response
    token = form.get("token")
    svc = services(request)
    who, _ = await svc.run(
        state.directory.identify, [("form", token)] if isinstance(token, str) and token else []
    )
    if who is None:
        state.throttle.failed(address)
        await svc.run(state.directory.record, "unknown", "sign-in-failed", "", address)
        return render(request, "login.html", 401, nav="login",
                      error="That token is wrong, revoked or expired: ask an admin for a new one")  # fmt: skip
    state.throttle.succeeded(address)
    await svc.run(state.directory.record, who.name, "sign-in", who.role, address)
    response = RedirectResponse("/wiki", status_code=303)
    cookie = state.sessions.cookie(
        state.sessions.issue(who.key), secure=request.url.scheme == "https"
    )
    response.headers.append("set-cookie", cookie)
    return response


def routes() -> list[Route]:
    return [Route("/login", login, methods=["GET", "POST"])]
