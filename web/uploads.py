"""Reading a submission: pasted text as JSON, or files (and pasted text) as multipart.

Every file is checked before anything is queued: over the size limit, binary, not UTF-8
or empty are refused by name, with the reason. A client's file name is only ever shown,
never used as a path: the queue spools content under an id of its own.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import PurePosixPath
from typing import Any

from starlette.datastructures import FormData, UploadFile
from starlette.requests import Request
from starlette.types import Message

from compiler.documents import fetch_policy, fetch_url, format_of, is_url
from compiler.redact import redact_name
from compiler.sources import KIND_BY_EXTENSION, decode_text, guess_title
from kb_ai.errors import SourceError, UsageError
from kb_ai.settings import Settings
from web import csrf
from web.errors import TooLargeError, UnsupportedError
from web.multipart import CappedParser, FileLimit, check_name, file_limit, parse_capped
from web.services import Limits

KINDS = ("note", "document", "transcript")
JSON_MAX_BYTES = 1_000_000  # a question, a title: JSON bodies other than submissions


@dataclass(frozen=True)
class Submission:
    title: str
    content: bytes
    filename: str
    kind: str
    url: str = ""  # a page or document to fetch (compiler/documents) when it is queued
    revises: str = ""  # the id of the source it revises, as the sender said (the form)


def display_name(name: str | None) -> str:
    """A file name fit to show: no directories, no control characters, at most 200 chars."""
    base = PurePosixPath((name or "").replace("\\", "/")).name
    clean = "".join(ch for ch in base if unicodedata.category(ch)[0] != "C").strip()
    return redact_name(clean)[:200] or "upload"  # redacted whole, then cut


async def read_submission(
    request: Request,
    limits: Limits,
    *,
    check_form: Callable[[FormData], None] | None = None,
) -> tuple[list[Submission], list[dict[str, str]]]:
    """(accepted, rejected); raises when the request itself is unusable. The body is
    refused (413) as soon as it passes its limit, before the rest is read.

    ``check_form``: called with the parsed form before anything in it is used; given,
    only a form is taken (a page's form, whose CSRF field it checks)."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype == "application/json" and check_form is None:
        hint = "split the text into smaller documents"
        body = await limit_body(request, limits.max_json_bytes, hint).body()
        return [_from_json(parse_json(body), limits)], []
    if ctype in ("multipart/form-data", "application/x-www-form-urlencoded"):
        return await _from_form(limit_body(request, limits.max_body_bytes), limits, check_form)
    if check_form is not None:
        raise UnsupportedError("This page takes its form", hint="scripts send JSON to /api/submit")
    raise UnsupportedError(
        f"Cannot read a {ctype or 'body without a content type'}",
        hint='send JSON {"title", "content"} or multipart/form-data with "files"',
    )


def limit_body(
    request: Request, max_bytes: int, hint: str = "send fewer or smaller files at once"
) -> Request:
    """The request, refusing a body over ``max_bytes`` (declared, or as it streams in:
    nothing past the limit is read)."""
    too_large = TooLargeError(f"The request is over the {max_bytes:,}-byte limit", hint=hint)
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise too_large
    seen = 0

    async def receive() -> Message:
        nonlocal seen
        message = await request.receive()
        seen += len(message.get("body", b""))
        if seen > max_bytes:
            raise too_large
        return message

    return Request(request.scope, receive)


async def page_form(request: Request) -> FormData:
    """The fields of a small page form (a button, a title), once its CSRF field is
    checked (403 without it): what every state-changing page route reads first, before
    it looks at anything else."""
    form = await limit_body(request, JSON_MAX_BYTES).form()
    csrf.check_form(request, form)
    return form


async def json_object(request: Request, *, example: str = "") -> dict[str, Any]:
    """The JSON object of a small request body (a question, a title; an empty body is
    ``{}``); a clear UsageError otherwise, showing ``example`` of what to send."""
    body = parse_json(await limit_body(request, JSON_MAX_BYTES).body() or b"{}")
    if not isinstance(body, dict):
        raise UsageError("Send a JSON object" + (f": {example}" if example else ""))
    return body


def parse_json(body: bytes) -> Any:
    """The JSON value of a request body; a UsageError (400) for anything else, nesting
    too deep for the parser included."""
    try:
        return json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"The body is not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise UsageError("The body is JSON nested too deeply to read",
                         hint="send a flat object") from exc  # fmt: skip


def _from_json(body: Any, limits: Limits) -> Submission:
    if not isinstance(body, dict):
        raise UsageError('Send a JSON object: {"title": "...", "content": "..."}')
    if body.get("url") is not None:
        return _url(body.get("url"), body.get("title") or "")
    content, title, kind = body.get("content"), body.get("title") or "", body.get("kind") or "note"
    revises = body.get("revises") or ""
    if not isinstance(content, str) or not isinstance(title, str) or not isinstance(revises, str):
        raise UsageError('"content", "title" and "revises" must be strings')
    return replace(_pasted(title, content, kind, limits), revises=revises.strip())


def _url(url: Any, title: Any) -> Submission:
    """A URL to fetch when queued (the server checks where it points, then fetches it)."""
    if not isinstance(url, str) or not isinstance(title, str) or not is_url(url.strip()):
        raise UsageError('"url" must be an http:// or https:// URL', hint='{"url": "https://..."}')
    url = url.strip()
    if len(url) > 2_000:
        raise UsageError("The URL is longer than 2,000 characters")
    return Submission(title.strip()[:200], b"", "", "document", url=url)


def _pasted(title: str, content: str, kind: str, limits: Limits) -> Submission:
    if kind not in KINDS:
        raise UsageError(f"Unknown kind {kind!r}", hint=f"one of {', '.join(KINDS)}")
    if not content.strip():
        raise UsageError("The document is empty", hint="paste some text, or choose files")
    data = content.encode("utf-8")
    if len(data) > limits.max_file_bytes:
        raise TooLargeError(
            f"The text is {len(data):,} bytes, over the {limits.max_file_bytes:,}-byte limit",
            hint="split it into smaller documents",
        )
    text = decode_text(data, "the pasted text")
    return Submission(title.strip() or guess_title(text, "Pasted note"), data, "", kind)


async def _from_form(
    request: Request, limits: Limits, check_form: Callable[[FormData], None] | None
) -> tuple[list[Submission], list[dict[str, str]]]:
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "multipart/form-data":
        async with request.form(max_files=limits.max_files, max_fields=limits.max_fields,
                                max_part_size=limits.max_file_bytes) as form:  # fmt: skip
            accepted, rejected = _read_form(form, limits, check_form, [])
            return said_revises(form, accepted), rejected
    parser = CappedParser(
        request.headers,
        request.stream(),
        limit_of=partial(
            file_limit,
            max_text_bytes=limits.max_file_bytes,
            max_document_bytes=limits.document_bytes,
        ),  # fmt: skip
        max_files=limits.max_files,
        max_fields=limits.max_fields,
        max_part_size=limits.max_file_bytes,
    )
    form = await parse_capped(parser)
    try:
        files = [f for f in form.getlist("files") if isinstance(f, UploadFile) and f.filename]
        accepted, rejected = _read_form(form, limits, check_form, files)
        for upload in files:
            name = display_name(upload.filename)
            try:
                check_name(upload.filename or "")
                accepted.append(await _from_file(upload, name, parser.limit_passed(upload)))
            except (SourceError, UsageError) as exc:
                rejected.append({"filename": name, "error": str(exc),
                                 "too_large": isinstance(exc, TooLargeError)})  # fmt: skip
    finally:
        await form.close()
    return said_revises(form, accepted), rejected


def _read_form(
    form: FormData,
    limits: Limits,
    check_form: Callable[[FormData], None] | None,
    files: list[UploadFile],
) -> tuple[list[Submission], list[dict[str, str]]]:
    """The pasted text and URL of a form (its files are read by the caller)."""
    if check_form is not None:
        check_form(form)
    content, title, url = form.get("content"), form.get("title"), form.get("url")
    accepted: list[Submission] = []
    if isinstance(url, str) and url.strip():
        accepted.append(_url(url, title if isinstance(title, str) else ""))
    if isinstance(content, str) and content.strip():
        accepted.append(_pasted(title if isinstance(title, str) else "", content, "note", limits))
    if not accepted and not files:
        raise UsageError("Nothing to submit", hint="paste some text, or choose files")
    return accepted, []


def said_revises(form: FormData, accepted: list[Submission]) -> list[Submission]:
    """The submissions with the form's "This revises" field, which names the source one
    document revises (several at once: refused, the field cannot say which)."""
    revises = form.get("revises")
    if not isinstance(revises, str) or not revises.strip():
        return accepted
    if len(accepted) > 1:
        raise UsageError(
            f'"This revises" names the source of one document, and {len(accepted)} were sent',
            hint="submit the revision on its own, and the other documents without the field",
        )
    return [replace(item, revises=revises.strip()) for item in accepted]


async def _from_file(upload: UploadFile, name: str, passed: FileLimit | None) -> Submission:
    """A file of the form; ``passed``: the limit it went over while it streamed in."""
    if passed is not None:
        raise TooLargeError(
            f"{name}: over the {passed.max_bytes:,}-byte limit for a {passed.what} "
            f"({passed.setting})",
            hint=f"split it, or raise {passed.setting} in kb-ai.toml",
        )
    data = await upload.read()
    if format_of(name):  # a document: converted by the worker (compiler/documents)
        if not data.strip():
            raise SourceError(f"{name}: the file is empty")
        return Submission(PurePosixPath(name).stem, data, name, "document")
    text = decode_text(data, name)
    suffix = PurePosixPath(name).suffix.lower()
    stem = PurePosixPath(name).stem
    return Submission(
        guess_title(text, stem), data, name, KIND_BY_EXTENSION.get(suffix, "document")
    )


def fetch_submission(item: Submission, settings: Settings) -> Submission:
    """A URL submission with what it points at, fetched under the server's address policy
    (a refused or failed fetch raises DocumentError, naming why)."""
    fetched = fetch_url(item.url, fetch_policy(settings))
    title = item.title or PurePosixPath(fetched.filename).stem
    return Submission(title, fetched.data, fetched.filename, "document", url=item.url)
