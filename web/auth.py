"""Who may use the server, and what a browser may do with its pages.

- A token is required for everything when the server has one (``KB_AI_TOKEN``, an
  admin's) or has people (`kb-ai users add`, each with a token and a role, see
  web/people.py), which `kb-ai serve` insists on for any address but loopback. It is
  accepted as
  ``Authorization: Bearer <token>``, as an HttpOnly cookie, or once as ``?token=`` on a
  page, which sets the cookie and drops the token from the address bar. Compared in
  constant time. Wrong tokens in a row from one address are slowed as failed sign-ins
  are (after FREE_TOKEN_FAILURES, web/sessions.py), refused before their scrypt hash is
  computed, unless a token offered is one already known good.
- Without a token (loopback only), the Host header must name loopback, so a web page
  elsewhere cannot reach the server by DNS rebinding.
- A state-changing request (any method but GET, HEAD, OPTIONS) must come from kb-ai's
  own pages or from a script. A request that shows it comes from a browser (an
  ``Origin`` or ``Sec-Fetch-Site`` header, or a form-type body sent with cookies) must be
  same-origin (``Origin: null`` is foreign) and carry the page's CSRF token (web/csrf.py):
  the ``X-KB-AI-CSRF`` header on the API, the ``csrf`` field on the page forms, which
  check it themselves. A request with none of those is a script's (curl, the CLI) and
  passes; so does one with the right bearer token. The page forms always need their
  field: scripts use /api.
- Every response carries a Content-Security-Policy that allows only the server's own
  script and styles: rendered Markdown is sanitised, and this is the second lock.
"""

from __future__ import annotations

import hmac
import html
import ipaddress
import json
import math
import secrets
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kb_ai.errors import StorageError
from web import csrf
from web.forwarded import peer
from web.people import ANONYMOUS, LOCAL, Directory, Visitor
from web.sessions import COOKIE as SESSION_COOKIE
from web.sessions import FREE_TOKEN_FAILURES, Sessions, SignInThrottle

COOKIE = "kb_ai_token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# The body types a page on another site can send without asking first (CORS "simple").
FORM_TYPES = frozenset({"application/x-www-form-urlencoded", "multipart/form-data", "text/plain"})
SCRIPT_PATHS = ("/api/", "/mcp", "/healthz")  # everything else that writes is a page form
LOGIN = "/login"  # the sign-in page: open to all, it checks the token itself
TOO_MANY = "Too many failed sign-ins from this address: wait, then try again"
WRONG_TOKENS = "Too many wrong tokens from this address: wait, then send the right one"
FOREIGN = "Refused: requests that change data must come from kb-ai's own pages"
SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
        "form-action 'self'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
}


def is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_name(host_header: str) -> str:
    if host_header.startswith("["):
        return host_header[1 : host_header.find("]")]
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


class GuardMiddleware:
    """Token, host and origin checks, and security headers, for every HTTP request."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str | None,
        csrf_token: str | None = None,
        directory: Directory | None = None,
        sessions: Sessions | None = None,
        throttle: SignInThrottle | None = None,
        tokens: SignInThrottle | None = None,
    ) -> None:
        """``csrf_token``: the token of the pages (web/csrf.py); without one, none is valid
        and browsers cannot write (an app with no pages). ``directory``: the people whose
        tokens are good too (web/people.py); without it, only ``token``."""
        self.app = app
        self.token = token.encode() if token else None
        self.csrf_token = csrf_token or secrets.token_urlsafe(32)
        self.directory = directory
        self.sessions = sessions
        self.throttle = throttle or SignInThrottle()
        self.tokens = tokens or SignInThrottle(free=FREE_TOKEN_FAILURES)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        path = scope["path"]
        offered = _offered(scope, headers, self.sessions)
        address = (scope.get("client") or ("",))[0]
        proxy = self.directory.proxy if self.directory is not None else None
        proxied = proxy.person(peer(scope), headers) if proxy is not None else None
        if proxied is not None:
            offered.insert(0, ("proxy", proxied))
        in_query = any(where == "query" for where, _ in offered)
        wait = self.throttle.wait(address) if in_query else 0.0
        if wait > 0:  # failed sign-ins from this address: it waits before the next
            await _send_error(send, path, headers, 429, TOO_MANY, retry_after=wait)
            return
        # tokens a script (or a cookie) offers: wrong ones in a row wait too, unless the
        # token is one known good already (no hash to compute for it)
        scripted = [t for where, t in offered if where in ("bearer", "cookie")]
        cheap = self.directory is None or any(self.directory.cheap(t) for t in scripted)
        wait = self.tokens.wait(address) if scripted and not in_query and not cheap else 0.0
        if wait > 0:
            await _send_error(send, path, headers, 429, WRONG_TOKENS, retry_after=wait)
            return
        try:
            who, required = await self._identify(offered)
        except StorageError as exc:  # the people cannot be read: no one is let in on them
            if path != "/healthz":
                await _send_error(send, path, headers, 503, str(exc))
                return
            who, required = self._admin_only(offered)  # /healthz reports the fault itself
        refusal = self._refuse(scope, headers, who, required)
        if refusal is not None and refusal[0] == 401 and _health_probe(scope, offered):
            refusal = None  # a load balancer's or container's probe: the answer says less
        if scripted and not in_query and not cheap:
            if refusal is not None and refusal[0] == 401:
                self.tokens.failed(address)
            elif who is not None:
                self.tokens.succeeded(address)
        if refusal is not None:
            if in_query and refusal[0] == 401:  # a failed sign-in
                self.throttle.failed(address)
                if self.directory is not None:
                    await run_in_threadpool(
                        self.directory.record, "unknown", "sign-in-failed", "", address
                    )
            sign_in = _sign_in_form(scope, self.csrf_token) if refusal[0] == 401 else ""
            await _send_error(send, path, headers, *refusal, sign_in=sign_in)
            return
        scope.setdefault("state", {})["visitor"] = who or (ANONYMOUS if required else LOCAL)
        signing_in = who is not None and who.via == "query"
        if signing_in and scope["method"] == "GET" and not path.startswith("/api"):
            # a page opened from a link with the token: keep it in a cookie instead
            pairs = parse_qsl(
                scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True
            )
            token = next(v for k, v in pairs if k == "token")
            rest = urlencode([(k, v) for k, v in pairs if k != "token"])
            self.throttle.succeeded(address)
            if self.directory is not None:
                await run_in_threadpool(
                    self.directory.record, who.name, "sign-in", who.role, address
                )
            location = path + (f"?{rest}" if rest else "")
            if self.sessions is not None:
                value = self.sessions.issue(who.key)
                cookie = self.sessions.cookie(value, secure=scope.get("scheme") == "https")
            else:
                cookie = f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"
            await _redirect_with_cookie(send, location, cookie)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                out = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    out.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, send_with_headers)

    async def _identify(self, offered: list[tuple[str, str]]) -> tuple[Visitor | None, bool]:
        """Who the offered tokens name (None: no one), and whether a token is required."""
        if self.directory is None:
            return self._admin_only(offered)
        if not offered and self.token is not None:
            return None, True  # no need to ask the people
        return await run_in_threadpool(self.directory.identify, offered)

    def _admin_only(self, offered: list[tuple[str, str]]) -> tuple[Visitor | None, bool]:
        """The visitor by ``KB_AI_TOKEN`` alone."""
        for where, token in offered:
            if self.token is not None and hmac.compare_digest(token.encode(), self.token):
                return Visitor("admin", via=where, key="admin"), True
        return None, self.token is not None

    def _refuse(
        self, scope: Scope, headers: dict[str, str], who: Visitor | None, required: bool
    ) -> tuple[int, str] | None:
        host = headers.get("host", "")
        if not required and host and not is_loopback(_host_name(host)):
            return 403, f"Host {host!r} is not this server's loopback address"
        if required and who is None and scope["path"] != LOGIN:
            return (
                401,
                "A good token is required (this one is wrong, revoked or missing): open the "
                "page with ?token=<token>, or send Authorization: Bearer <token>",
            )
        if scope["method"] not in SAFE_METHODS and not (who is not None and who.by_bearer):
            return self._refuse_foreign(scope["path"], headers)
        return None

    def _refuse_foreign(self, path: str, headers: dict[str, str]) -> tuple[int, str] | None:
        """A write from a browser that is not one of our pages (see the module docstring)."""
        origin, site = headers.get("origin"), headers.get("sec-fetch-site")
        if site is not None and site != "same-origin":
            return 403, f"{FOREIGN} (this one came from a {site} page)"
        if origin is not None and urlsplit(origin).netloc != headers.get("host", ""):
            return 403, f"{FOREIGN} (this one came from {origin!r})"
        ctype = headers.get("content-type", "").split(";")[0].strip().lower()
        browser = origin is not None or site is not None
        browser = browser or ("cookie" in headers and ctype in FORM_TYPES)
        if (
            browser
            and path.startswith(SCRIPT_PATHS)
            and not csrf.matches(headers.get(csrf.HEADER), self.csrf_token)
        ):
            return 403, csrf.REFUSED
        return None


def _health_probe(scope: Scope, offered: list[tuple[str, str]]) -> bool:
    """A GET of /healthz offering no token: answered without one (web/health.py says only
    whether the server is healthy and which parts are not), so that a load balancer or
    a container's health check needs no secret. A wrong token is refused as anywhere."""
    return scope["path"] == "/healthz" and scope["method"] in ("GET", "HEAD") and not offered


def _offered(
    scope: Scope, headers: dict[str, str], sessions: Sessions | None
) -> list[tuple[str, str]]:
    """(where, token) of every token the request carries: bearer, cookie, query, and
    the holder a signed session cookie names."""
    offered: list[tuple[str, str]] = []
    auth = headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        offered.append(("bearer", auth[7:].strip()))
    cookie = SimpleCookie()
    try:
        cookie.load(headers.get("cookie", ""))
    except CookieError:  # a malformed Cookie header is simply no token
        cookie = SimpleCookie()
    if COOKIE in cookie:
        offered.append(("cookie", cookie[COOKIE].value))
    if sessions is not None and SESSION_COOKIE in cookie:
        holder = sessions.holder(cookie[SESSION_COOKIE].value)
        if holder is not None:
            offered.append(("session", holder))
    query = scope.get("query_string", b"").decode("latin-1")
    offered += [("query", v) for k, v in parse_qsl(query) if k == "token"]
    return [(where, token) for where, token in offered if token]


def _sign_in_form(scope: Scope, csrf_token: str) -> str:
    """The sign-in form of a 401 page: it posts the token to /login (never in an address,
    which proxies and browser history keep), and comes back to the page asked for."""
    pairs = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    rest = urlencode([(k, v) for k, v in pairs if k != "token"])
    back = scope["path"] + (f"?{rest}" if rest else "")
    return (
        f'<form method="post" action="{LOGIN}">'
        f'<input type="hidden" name="csrf" value="{html.escape(csrf_token)}">'
        f'<input type="hidden" name="next" value="{html.escape(back)}">'
        '<label>Your token <input name="token" type="password" autofocus required></label> '
        "<button>Sign in</button></form>"
    )


async def _send_error(
    send: Send,
    path: str,
    headers: dict[str, str],
    status: int,
    message: str,
    retry_after: float = 0.0,
    sign_in: str = "",
) -> None:
    as_json = (
        path.startswith("/api")
        or path == "/healthz"
        or path.startswith("/mcp")
        or ("text/html" not in headers.get("accept", ""))
    )
    if as_json:
        kind = {401: "AuthError", 429: "TooManyError", 503: "StorageError"}.get(
            status, "ForbiddenError"
        )
        hint = "ask an admin for a token: kb-ai users add NAME --role ROLE" if status == 401 else ""
        fields = {"ok": False, "error": message, "status": status, "kind": kind}
        body = json.dumps({**fields, **({"hint": hint} if hint else {})}).encode()
        ctype = "application/json"
    else:
        body = (
            "<!doctype html><meta charset=utf-8><meta name=viewport content='width=device-width'>"
            f"<title>kb-ai: {status}</title><body style='font:1rem system-ui;margin:2rem'>"
            f"<h1>{status}</h1><p>{html.escape(message)}</p>{sign_in}"
        ).encode()
        ctype = "text/html; charset=utf-8"
    out = [(b"content-type", ctype.encode()), (b"content-length", str(len(body)).encode())]
    out += [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
    if status == 401:
        out.append((b"www-authenticate", b'Bearer realm="kb-ai"'))
    if retry_after:
        out.append((b"retry-after", str(math.ceil(retry_after)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": body})


async def _redirect_with_cookie(send: Send, location: str, cookie: str) -> None:
    headers = [
        (b"location", location.encode("latin-1")),
        (b"set-cookie", cookie.encode("latin-1")),
        (b"content-length", b"0"),
    ]
    await send({"type": "http.response.start", "status": 303, "headers": headers})
    await send({"type": "http.response.body", "body": b""})
