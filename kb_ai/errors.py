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


class StorageError(KbAiError):
    """The knowledge base's state database (.kb-ai/state.db) failed: a full disk, a file
    made read-only, a corrupted or vanished file, a lock held too long.

    ``path`` is the database, ``cause`` names the failure for callers that act on it
    (full, readonly, corrupt, io, busy, cantopen, other), ``transient`` says whether the
    same operation may succeed later unchanged (a lock, a full disk freed meanwhile)."""

    def __init__(
        self,
        message: str,
        *,
        path: str,
        cause: str,
        transient: bool,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint)
        self.path = path
        self.cause = cause
        self.transient = transient


class DatabaseAwayError(StorageError):
    """The shared database (``database_url``) does not answer: the server is down, out of
    reach, or the database is gone. kb-ai reconnects by itself; the process says once
    that it went away and once that it is back (wiki/database.py), so what waits it out
    (the compile workers) need not say it again at every try."""


# SQLite's primary result codes (sqlite3.h): the failures of the storage under a database,
# as opposed to the faults of a statement (a syntax error, a missing table).
_SQLITE_CAUSES = {
    3: "readonly",  # SQLITE_PERM
    5: "busy",  # SQLITE_BUSY
    6: "busy",  # SQLITE_LOCKED
    8: "readonly",  # SQLITE_READONLY
    10: "io",  # SQLITE_IOERR
    11: "corrupt",  # SQLITE_CORRUPT
    13: "full",  # SQLITE_FULL
    14: "cantopen",  # SQLITE_CANTOPEN
    15: "busy",  # SQLITE_PROTOCOL (a lock race in WAL mode)
    22: "full",  # SQLITE_NOLFS
    26: "corrupt",  # SQLITE_NOTADB
}
_STORAGE_WORDS = {
    "full": (
        "the disk is full",
        "free some disk space where {path} lives; kb-ai retries on its own",
    ),
    "readonly": (
        "the file or its folder is read-only",
        "make {path} and its folder writable by this user (check the owner and mode)",
    ),
    "corrupt": (
        "the file is corrupted (not a SQLite database any more)",
        "stop kb-ai, move {path} aside and start again: kb-ai rebuilds it from the"
        " knowledge base, losing chat sessions, the run history, the call log and cache",
    ),
    "io": (
        "the disk reported an I/O error",
        "check the disk and its free space where {path} lives",
    ),
    "busy": (
        "another process held it locked too long",
        "wait for the other kb-ai process (a compile, a server) or stop it, and try again",
    ),
    "cantopen": (
        "the file cannot be opened",
        "check that the folder of {path} exists and is writable by this user",
    ),
}
_TRANSIENT = {"full", "busy", "io"}


def storage_cause(exc: BaseException) -> str | None:
    """What failed under a SQLite database, by the error's result code (None: a fault of
    the statement, or no SQLite error)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        return None
    return _SQLITE_CAUSES.get(code & 0xFF)


def storage_error(exc: BaseException, path: object, doing: str) -> StorageError | None:
    """The :class:`StorageError` for a SQLite error raised while ``doing`` something with
    the database at ``path`` (None when it is a fault of the statement, not storage)."""
    cause = storage_cause(exc)
    if cause is None:
        return None
    what, fix = _STORAGE_WORDS[cause]
    return StorageError(
        f"Could not {doing} the state database {path}: {what} (SQLite: {exc})",
        path=str(path),
        cause=cause,
        transient=cause in _TRANSIENT,
        hint=fix.format(path=path),
    )


def file_storage_error(exc: OSError, path: object, doing: str) -> StorageError:
    """The :class:`StorageError` for a file kb-ai keeps beside state.db (the upload
    inbox) that could not be written: a full disk, a read-only folder, an I/O error."""
    import errno  # the standard library only: this module imports nothing of kb-ai

    cause = {
        errno.ENOSPC: "full",
        errno.EFBIG: "full",
        errno.EDQUOT: "full",
        errno.EROFS: "readonly",
        errno.EACCES: "readonly",
        errno.EPERM: "readonly",
    }.get(exc.errno or 0, "io")
    what, fix = _STORAGE_WORDS[cause]
    return StorageError(
        f"Could not {doing} {path}: {what} ({exc.strerror or exc})",
        path=str(path),
        cause=cause,
        transient=cause in _TRANSIENT,
        hint=fix.format(path=path),
    )
