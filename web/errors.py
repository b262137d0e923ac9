"""One error shape for the whole web app: kb-ai's (kb_ai/service/errors.py),
``{"ok": false, "error": ..., "status": N, "kind": ..., "hint": ...}``, the same the
answer stream's ``error`` event and MCP's tool errors carry.

kb-ai errors are mapped by their type, never by their message. API paths get JSON;
pages get the same words in an HTML page.
"""

from __future__ import annotations

import math
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from kb_ai.errors import KbAiError, UsageError
from kb_ai.service import STATUS_BY_TYPE as SERVICE_STATUS
from kb_ai.service import error_body, error_fields
from kb_ai.service import status_for as _status_for
from kb_ai.service.errors import StatusTable
from kb_ai.service.fairness import TooManyQuestionsError
from web.people import ForbiddenError
from web.templating import error_page


class TooLargeError(UsageError):
    """An upload or request body over the server's limits."""


class UnsupportedError(UsageError):
    """A request in a form the endpoint does not take (content type, method)."""


class AuthError(KbAiError):
    """No token, or the wrong one, on a server that requires it."""


# Most specific first: the first matching type decides the status. The web app's own
# errors, then kb-ai's.
STATUS_BY_TYPE: StatusTable = (
    (TooLargeError, 413),
    (UnsupportedError, 415),
    (AuthError, 401),
    (ForbiddenError, 403),
    *SERVICE_STATUS,
)


def status_for(exc: KbAiError) -> int:
    return _status_for(exc, STATUS_BY_TYPE)


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
    fields = error_fields(exc, STATUS_BY_TYPE)
    wait = getattr(exc, "retry_after", None)
    headers = (
        {"retry-after": str(math.ceil(wait))} if isinstance(exc, TooManyQuestionsError) else None
    )
    if not wants_json(request):
        page = error_page(request, fields["error"], fields["status"])
        page.headers.update(headers or {})
        return page
    return JSONResponse(fields, fields["status"], headers=headers)


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
