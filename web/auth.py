"""Who may use the server, and what a browser may do with its pages.

- A token (``KB_AI_TOKEN``) is required for everything when one is configured, which
  `kb-ai serve` insists on for any address but loopback. It is accepted as
  ``Authorization: Bearer <token>``, as an HttpOnly cookie, or once as ``?token=`` on a
  page, which sets the cookie and drops the token from the address bar. Compared in
  constant time.
- Without a token (loopback only), the Host header must name loopback, so a web page
  elsewhere cannot reach the server by DNS rebinding.
- A state-changing request from another origin is refused (no cross-site form posts).
- Every response carries a Content-Security-Policy that allows only the server's own
  script and styles: rendered Markdown is sanitised, and this is the second lock.
"""

from __future__ import annotations

import hmac
import html
import ipaddress
import json
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

COOKIE = "kb_ai_token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
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

    def __init__(self, app: ASGIApp, *, token: str | None) -> None:
        self.app = app
        self.token = token.encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        path = scope["path"]
        refusal = self._refuse(scope, headers)
        if refusal is not None:
            await _send_error(send, path, headers, *refusal)
            return
        query = scope.get("query_string", b"").decode("latin-1")
        pairs = parse_qsl(query, keep_blank_values=True)
        has_token = self.token and any(k == "token" for k, _ in pairs)
        if has_token and scope["method"] == "GET" and not path.startswith("/api"):
            # a page opened from a link with the token: keep it in a cookie instead
            rest = urlencode([(k, v) for k, v in pairs if k != "token"])
            await _redirect_with_cookie(send, path + (f"?{rest}" if rest else ""), self.token)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                out = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    out.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _refuse(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str] | None:
        host = headers.get("host", "")
        if self.token is None and host and not is_loopback(_host_name(host)):
            return 403, f"Host {host!r} is not this server's loopback address"
        origin = headers.get("origin")
        unsafe = scope["method"] not in SAFE_METHODS
        if unsafe and origin and origin != "null" and urlsplit(origin).netloc != host:
            return 403, "Cross-origin requests that change data are refused"
        if self.token is not None and not self._authorised(scope, headers):
            return (
                401,
                "A token is required: open the page with ?token=<KB_AI_TOKEN>, or send Authorization: Bearer <token>",
            )
        return None

    def _authorised(self, scope: Scope, headers: dict[str, str]) -> bool:
        assert self.token is not None
        offered: list[str] = []
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            offered.append(auth[7:].strip())
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except CookieError:  # a malformed Cookie header is simply no token
            cookie = SimpleCookie()
        if COOKIE in cookie:
            offered.append(cookie[COOKIE].value)
        query = scope.get("query_string", b"").decode("latin-1")
        offered += [v for k, v in parse_qsl(query) if k == "token"]
        return any(hmac.compare_digest(o.encode(), self.token) for o in offered)


async def _send_error(
    send: Send, path: str, headers: dict[str, str], status: int, message: str
) -> None:
    as_json = (
        path.startswith("/api")
        or path == "/healthz"
        or path.startswith("/mcp")
        or ("text/html" not in headers.get("accept", ""))
    )
    if as_json:
        body = json.dumps({"ok": False, "error": message, "status": status}).encode()
        ctype = "application/json"
    else:
        login = (
            '<form method="get"><label>Token <input name="token" type="password" autofocus></label> '
            "<button>Open</button></form>"
            if status == 401
            else ""
        )
        body = (
            "<!doctype html><meta charset=utf-8><meta name=viewport content='width=device-width'>"
            f"<title>kb-ai: {status}</title><body style='font:1rem system-ui;margin:2rem'>"
            f"<h1>{status}</h1><p>{html.escape(message)}</p>{login}"
        ).encode()
        ctype = "text/html; charset=utf-8"
    out = [(b"content-type", ctype.encode()), (b"content-length", str(len(body)).encode())]
    out += [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
    if status == 401:
        out.append((b"www-authenticate", b'Bearer realm="kb-ai"'))
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": body})


async def _redirect_with_cookie(send: Send, location: str, token: bytes) -> None:
    cookie = f"{COOKIE}={token.decode()}; Path=/; HttpOnly; SameSite=Strict"
    headers = [
        (b"location", location.encode("latin-1")),
        (b"set-cookie", cookie.encode("latin-1")),
        (b"content-length", b"0"),
    ]
    await send({"type": "http.response.start", "status": 303, "headers": headers})
    await send({"type": "http.response.body", "body": b""})
