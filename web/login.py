"""The sign-in page: a person pastes their token and gets a signed session cookie
(web/sessions.py) instead; failed tries are slowed per address and audited."""

from __future__ import annotations

import math
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from web.auth import TOO_MANY
from web.services import services
from web.templating import render
from web.uploads import page_form


async def login(request: Request) -> Response:
    if request.method == "GET":
        back = request.query_params.get("next", "")
        return render(request, "login.html", nav="login", next=back)
    form = await page_form(request)  # the page's CSRF field first, as every page form
    state = request.app.state
    address = request.client.host if request.client else ""
    wait = state.throttle.wait(address)
    if wait > 0:
        response = render(request, "login.html", 429, nav="login", error=TOO_MANY)
        response.headers["retry-after"] = str(math.ceil(wait))
        return response
    token, back = form.get("token"), form.get("next")
    back = back if isinstance(back, str) else ""
    svc = services(request)
    who, _ = await svc.run(
        state.directory.identify, [("form", token)] if isinstance(token, str) and token else []
    )
    if who is None:
        state.throttle.failed(address)
        await svc.run(state.directory.record, "unknown", "sign-in-failed", "", address)
        return render(request, "login.html", 401, nav="login", next=back,
                      error="That token is wrong, revoked or expired: ask an admin for a new one")  # fmt: skip
    state.throttle.succeeded(address)
    await svc.run(state.directory.record, who.name, "sign-in", who.role, address)
    response = RedirectResponse(_local(back) or "/wiki", status_code=303)
    cookie = state.sessions.cookie(
        state.sessions.issue(who.key), secure=request.url.scheme == "https"
    )
    response.headers.append("set-cookie", cookie)
    return response


def _local(back: str) -> str:
    """``back`` when it is a page of this server ("/status?x=1"), else "": a sign-in
    never sends the browser on to another site."""
    ok = back.startswith("/") and not back.startswith(("//", "/\\"))
    ok = ok and not urlsplit(back).netloc and all(c >= " " for c in back)
    return back if ok else ""


def routes() -> list[Route]:
    return [Route("/login", login, methods=["GET", "POST"])]
