"""A small transport speaking the OpenAI chat-completions wire format over aiohttp.

Used by ``open_llm`` for ``openai/<name>`` with an api_base (unless ``transport`` says
litellm): a question does not pay ~4 s for importing litellm, and a compile does not pay
~5 ms of event-loop time per call. No price map here: cost is 0.0.

aiohttp rather than httpx: with 16 requests in flight httpx spent 1.4-1.5 ms of the
event loop's time per request (its connection pool polls every idle connection on each
request), aiohttp 0.4-0.5 ms, and the compile's calls all share that one loop. aiohttp
is installed anyway: litellm depends on it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit
from urllib.request import getproxies_environment, proxy_bypass_environment

import aiohttp

from kb_ai.errors import LLMError, LLMOutputError, LLMTimeoutError, LLMTransientError
from kb_ai.llm._slots import on_sent
from kb_ai.llm._transport import RawReply, Request, parse_retry_after

BODY_CHARS = 2000
# Bytes of body per character of reply allowed for: JSON escapes a character in up to
# six (\uXXXX), plus the envelope around it.
BODY_BYTES_PER_CHAR = 6
ENVELOPE_BYTES = 65_536


def wire_model(model: str) -> str:
    """The model name the server knows: litellm's ``openai/`` prefix removed."""
    return model.removeprefix("openai/")


def map_status(status: int, body: str, model: str, retry_after: str | None = None) -> LLMError:
    """kb-ai's error for an HTTP error status: 408, 429 and 5xx are worth retrying.

    ``retry_after`` is the response's Retry-After header, kept (in seconds) on the error."""
    message = _error_message(body) or f"HTTP {status}"
    wait = parse_retry_after(retry_after)
    if status == 408:
        return LLMTimeoutError(
            f"{model} timed out: {message}",
            model=model,
            status=status,
            body=body[:BODY_CHARS],
            retry_after=wait,
        )
    cls = LLMTransientError if status == 429 or status >= 500 else LLMError
    return cls(
        f"{model} failed (HTTP {status}): {message}",
        model=model,
        status=status,
        body=body[:BODY_CHARS],
        retry_after=wait,
    )


def body_limit(request: Request) -> int | None:
    """Bytes of response body to read at most for ``request`` (None: no bound)."""
    if not request.max_reply_chars:
        return None
    return request.max_reply_chars * BODY_BYTES_PER_CHAR + ENVELOPE_BYTES


def too_large(request: Request, size: int, limit: int) -> LLMOutputError:
    return LLMOutputError(
        f"{request.model} sent a reply of over {size:,} bytes, past the {limit:,} read for a "
        f"reply of at most {request.max_reply_chars:,} characters (max_reply_chars)",
        model=request.model,
        status=200,
        hint="the model is looping or ignoring max_tokens; raise max_reply_chars only if "
        "replies this long are expected",
    )


async def _read_bounded(response: aiohttp.ClientResponse, request: Request) -> bytes:
    """The whole body, refused as soon as it passes the request's bound."""
    limit = body_limit(request)
    if limit is None:
        return await response.read()
    if response.content_length is not None and response.content_length > limit:
        raise too_large(request, response.content_length, limit)
    parts: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_any():
        size += len(chunk)
        if size > limit:
            raise too_large(request, size, limit)
        parts.append(chunk)
    return b"".join(parts)


TRANSPORT_ERRORS = (aiohttp.ClientError, TimeoutError, OSError)


def map_transport_error(exc: BaseException, model: str) -> LLMError:
    """kb-ai's error for a failure below HTTP (connect, read, a dropped connection)."""
    if isinstance(exc, TimeoutError):  # aiohttp's timeouts are TimeoutError too
        return LLMTimeoutError(f"{model} timed out ({type(exc).__name__})", model=model)
    detail = str(exc) or type(exc).__name__
    return LLMTransientError(f"{model} unreachable: {type(exc).__name__}: {detail}", model=model)


def proxy_for(url: str) -> str | None:
    """The proxy HTTP(S)_PROXY names for ``url``, unless NO_PROXY exempts its host."""
    parts = urlsplit(url)
    if proxy_bypass_environment(parts.hostname or ""):
        return None
    return getproxies_environment().get(parts.scheme)


def _timeout(seconds: float) -> aiohttp.ClientTimeout:
    """Connect and every read within the stage's timeout; the client bounds a whole call."""
    return aiohttp.ClientTimeout(total=None, sock_connect=seconds, sock_read=seconds)


def _error_message(body: str) -> str:
    try:
        data = json.loads(body)
    except ValueError:
        return body.strip().splitlines()[0][:300] if body.strip() else ""
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or "")[:300]
    return str(error or "")[:300]


async def _body_sent(_session: Any, context: Any, _params: Any) -> None:
    # aiohttp's trace of a request body being written: the call's slot learns its
    # request is out (kb_ai/llm/_slots.py), so replies read meanwhile may be checked.
    sent = context.trace_request_ctx
    if sent is not None:
        sent()


class HttpTransport:
    """One aiohttp session per event loop (asyncio.run() twice must still work)."""

    tells_sent = True  # see _body_sent

    def __init__(self) -> None:
        self._sessions: dict[asyncio.AbstractEventLoop, aiohttp.ClientSession] = {}
        # Looked up once per URL: reading the environment cost ~0.7 ms a call.
        self._proxies: dict[str, str | None] = {}

    def _proxy(self, url: str) -> str | None:
        if url not in self._proxies:
            self._proxies[url] = proxy_for(url)
        return self._proxies[url]

    def _session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        for old in [lp for lp in self._sessions if lp.is_closed()]:
            self._sessions.pop(old).detach()  # its loop is gone, and its connections with it
        session = self._sessions.get(loop)
        if session is None:
            # Not trust_env: with it aiohttp looks up ~/.netrc in the default thread pool
            # on every request, so each call queued behind the compile's file writes
            # (~17 ms a call at 16 in flight). Proxies come from proxy_for() instead.
            # No connection cap of aiohttp's own (100): the client's max_concurrency bounds
            # the calls in flight.
            connector = aiohttp.TCPConnector(limit=0)
            trace = aiohttp.TraceConfig()
            trace.on_request_chunk_sent.append(_body_sent)
            session = self._sessions[loop] = aiohttp.ClientSession(
                connector=connector, trace_configs=[trace]
            )
        return session

    def _prepare(self, request: Request, stream: bool) -> tuple[str, dict, dict[str, Any]]:
        if not request.api_base:
            raise LLMError("the fast transport needs an api_base", model=request.model)
        url = request.api_base.rstrip("/") + "/chat/completions"
        headers = {"Content-Type": "application/json"}
        if request.api_key:
            headers["Authorization"] = f"Bearer {request.api_key}"
        body: dict[str, Any] = {
            "model": wire_model(request.model),
            "messages": request.messages,
            "temperature": 0,
        }
        if request.max_tokens:
            body["max_tokens"] = request.max_tokens
        if request.response_format is not None:
            body["response_format"] = request.response_format
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return url, headers, body

    def _post(self, request: Request, *, stream: bool) -> Any:
        """The POST of ``request`` (an aiohttp request context manager)."""
        url, headers, body = self._prepare(request, stream)
        return self._session().post(
            url,
            data=json.dumps(body),
            headers=headers,
            timeout=_timeout(request.timeout),
            proxy=self._proxy(url),
            trace_request_ctx=on_sent.get(),  # told when the body goes out (_body_sent)
        )

    async def prepare(self) -> None:
        return None

    async def send(self, request: Request) -> RawReply:
        post = self._post(request, stream=False)
        try:
            async with post as response:
                status = response.status
                retry_after = response.headers.get("Retry-After")
                payload = await _read_bounded(response, request)
        except TRANSPORT_ERRORS as exc:
            raise map_transport_error(exc, request.model) from exc
        text = payload.decode("utf-8", "replace")
        if status != 200:
            raise map_status(status, text, request.model, retry_after)
        try:
            data = json.loads(text)
            choice = data["choices"][0]
            text = choice["message"].get("content") or ""
        except (ValueError, LookupError, TypeError, AttributeError) as exc:
            raise LLMTransientError(
                f"{request.model} sent a reply that is not a chat completion",
                model=request.model,
                status=200,
                body=text[:BODY_CHARS],
            ) from exc
        usage = data.get("usage") or {}
        return RawReply(
            text=text,
            finish_reason=choice.get("finish_reason"),
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
        )

    async def stream(self, request: Request) -> AsyncIterator[str | RawReply]:
        post = self._post(request, stream=True)
        parts: list[str] = []
        finish: str | None = None
        prompt_tokens = completion_tokens = 0
        ended = False  # [DONE] seen
        try:
            async with post as response:
                if response.status != 200:
                    text = (await _read_bounded(response, request)).decode("utf-8", "replace")
                    raise map_status(
                        response.status, text, request.model, response.headers.get("Retry-After")
                    )
                async for raw_line in response.content:
                    line = raw_line.decode("utf-8", "replace").strip()
                    if not line.startswith("data:"):
                        continue
                    payload = line[5:].strip()
                    if payload == "[DONE]":
                        ended = True
                        break
                    try:
                        chunk = json.loads(payload)
                    except ValueError as exc:
                        raise LLMTransientError(
                            f"{request.model} sent a malformed stream event",
                            model=request.model,
                            body=payload[:BODY_CHARS],
                        ) from exc
                    usage = chunk.get("usage")
                    if usage:
                        prompt_tokens = int(usage.get("prompt_tokens") or 0)
                        completion_tokens = int(usage.get("completion_tokens") or 0)
                    for choice in chunk.get("choices") or ():
                        finish = choice.get("finish_reason") or finish
                        delta = (choice.get("delta") or {}).get("content")
                        if delta:
                            parts.append(delta)
                            yield delta
        except TRANSPORT_ERRORS as exc:
            raise map_transport_error(exc, request.model) from exc
        if not ended and finish is None:  # the connection closed mid-reply
            raise LLMTransientError(
                f"{request.model} closed the reply stream before the reply was finished",
                model=request.model,
            )
        yield RawReply("".join(parts), finish, prompt_tokens, completion_tokens)

    def supports_response_schema(self, model: str) -> bool:
        return False  # custom endpoints: the client picks json_object before asking

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        session = self._sessions.pop(loop, None)
        if session is not None:
            await session.close()
