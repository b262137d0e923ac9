"""The one error tree of kb-ai.

Every error a user can meet carries a message that says what went wrong and, where
there is one, what to do about it. The edges translate these: the CLI into a
``click.ClickException`` (exit 2 for usage errors), the web app into one JSON shape,
MCP into a tool error. Nothing classifies an error by its message text.

This module imports nothing of kb-ai, so every package may use it.
"""

from __future__ import annotations


class KbAiError(Exception):
    """Base of every error kb-ai raises on purpose."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class UsageError(KbAiError):
    """The user asked for something that cannot be done as asked (exit status 2)."""


class ConfigError(UsageError):
    """A setting is missing or wrong: no model, an unknown key in kb-ai.toml, ..."""


class NotAKnowledgeBaseError(UsageError):
    """The directory given as the knowledge base is not one."""


class PathEscapeError(UsageError):
    """A path would resolve outside the part of the knowledge base it must stay in."""


class SourceError(KbAiError):
    """One source cannot be compiled: missing, binary, empty, too large, not UTF-8."""


class DocumentError(SourceError):
    """A document (PDF, Word, slides, a sheet, a page, an archive) cannot be converted.

    ``cause`` names why, for callers that act on it: encrypted, no_text, corrupt,
    unsupported, too_large, refused (a URL kb-ai will not fetch), fetch (it failed),
    timeout (the conversion took longer than convert_timeout).
    """

    def __init__(self, message: str, *, cause: str, hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.cause = cause


class EditConflictError(UsageError):
    """An article changed since the person saving it loaded it: saving would overwrite
    someone else's change."""


class NotFoundError(KbAiError):
    """An article, task or session that does not exist."""


class LLMError(KbAiError):
    """A model call failed. Keeps the model, the HTTP status and the body for the log,
    and the seconds the server asked to wait before trying again (Retry-After), if any."""

    retryable = False

    def __init__(
        self,
        message: str,
        *,
        model: str | None = None,
        status: int | None = None,
        body: str | None = None,
        hint: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, hint)
        self.model = model
        self.status = status
        self.body = body
        self.retry_after = retry_after


class LLMTransientError(LLMError):
    """A failure worth retrying: a timeout, a 429, a 5xx, a dropped connection."""

    retryable = True


class LLMTimeoutError(LLMTransientError):
    """The model did not answer within the stage's timeout."""


class LLMOutputError(LLMError):
    """The model answered, but not in a form kb-ai can use (invalid JSON, cut off, empty)."""


class CircuitOpenError(LLMError):
    """Too many calls failed in a row: the endpoint is treated as down for this run."""
