"""One error shape for the whole web app: ``{"ok": false, "error": ..., "status": N}``.

kb-ai errors are mapped by their type, never by their message. API paths get JSON;
pages get the same words in an HTML page.
"""

from __future__ import annotations

from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from kb_ai.errors import (
    ConfigError,
    EditConflictError,
    KbAiError,
    LLMError,
    NotFoundError,
    PathEscapeError,
    SourceError,
    UsageError,
)
from web.templating import error_page


class TooLargeError(UsageError):
    """An upload or request body over the server's limits."""


class UnsupportedError(UsageError):
    """A request in a form the endpoint does not take (content type, method)."""


class AuthError(KbAiError):
    """No token, or the wrong one, on a server that requires it."""


# Most specific first: the first matching type decides the status.
STATUS_BY_TYPE: tuple[tuple[type[KbAiError], int], ...] = (
    (TooLargeError, 413),
    (UnsupportedError, 415),
    (AuthError, 401),
    (EditConflictError, 409),
    (PathEscapeError, 400),
    (ConfigError, 400),
    (UsageError, 400),
    (SourceError, 400),
    (NotFoundError, 404),
    (LLMError, 502),
)


def status_for(exc: KbAiError) -> int:
    for kind, status in STATUS_BY_TYPE:
        if isinstance(exc, kind):
            return status
    return 500


def error_body(message: str, status: int, **extra: Any) -> dict[str, Any]:
    return {"ok": False, "error": message, "status": status, **extra}


def error_json(message: str, status: int, **extra: Any) -> JSONResponse:
    return JSONResponse(error_body(message, status, **extra), status_code=status)


def wants_json(request: Request) -> bool:
    path = request.url.path
    return (
        path.startswith("/api")
        or path == "/healthz"
        or "json" in request.headers.get("accept", "").split(",")[0]
    )


async def on_kb_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, KbAiError)
    status = status_for(exc)
    return _respond(request, str(exc), status, kind=type(exc).__name__)


async def on_http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    message = {
        404: "Not found",
        405: "Method not allowed",
        413: "The request is too large",
    }.get(exc.status_code, str(exc.detail))
    if exc.status_code == 413:
        message += " (see the upload limits on the Submit page)"
    return _respond(request, message, exc.status_code, headers=exc.headers)


def _respond(
    request: Request, message: str, status: int, headers: dict | None = None, **extra: Any
) -> Response:
    if wants_json(request):
        return JSONResponse(error_body(message, status, **extra), status, headers=headers)
    return error_page(request, message, status)
