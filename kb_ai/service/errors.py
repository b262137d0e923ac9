"""kb-ai's one error shape, for every edge that sends an error as data: the JSON API,
the answer stream's ``error`` event and MCP's tool errors all carry

    {"ok": false, "error": <message (hint)>, "status": <HTTP status>, "kind": <type>,
     "hint": <what to do, when there is something>}

The status is chosen by the error's type, never its message."""

from __future__ import annotations

from typing import Any

from kb_ai.errors import (
    ConfigError,
    EditConflictError,
    KbAiError,
    LLMError,
    NotFoundError,
    PathEscapeError,
    SourceError,
    StorageError,
    UsageError,
)
from kb_ai.service.fairness import TooManyQuestionsError

StatusTable = tuple[tuple[type[KbAiError], int], ...]


class SelfReviewError(KbAiError):
    """A person approved or rejected their own run while review_self_approve is off."""


# Most specific first: the first matching type decides the status.
STATUS_BY_TYPE: StatusTable = (
    (EditConflictError, 409),
    (SelfReviewError, 403),
    (TooManyQuestionsError, 429),
    (PathEscapeError, 400),
    (ConfigError, 400),
    (UsageError, 400),
    (SourceError, 400),
    (NotFoundError, 404),
    (LLMError, 502),
    (StorageError, 503),  # the server is up, its state database is not
)


def status_for(exc: KbAiError, table: StatusTable = STATUS_BY_TYPE) -> int:
    for kind, status in table:
        if isinstance(exc, kind):
            return status
    return 500


def error_body(message: str, status: int, **extra: Any) -> dict[str, Any]:
    """The shape around a message (for failures that are not a KbAiError: a 404 route)."""
    return {"ok": False, "error": message, "status": status, **extra}


def error_fields(exc: KbAiError, table: StatusTable = STATUS_BY_TYPE) -> dict[str, Any]:
    """``exc`` in the one shape; ``table`` maps types to statuses (an edge may put its
    own error types before kb-ai's)."""
    hint = {"hint": exc.hint} if exc.hint else {}
    return error_body(str(exc), status_for(exc, table), kind=type(exc).__name__, **hint)
