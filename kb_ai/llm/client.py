"""The client every part of kb-ai talks to models through.

Above a transport (litellm, or plain aiohttp for a fast start) it adds what every call
needs: a per-stage timeout, retries with exponential backoff on timeouts, 429s, 5xx
and dropped connections (never on other 4xx), a circuit breaker that fails a run fast
when the endpoint is down, bounded concurrency, structured output with a one-time
fallback to prompt mode, tolerant parsing, the response cache and the call log.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import aclosing
from pathlib import Path

from kb_ai.errors import (
    CircuitOpenError,
    ConfigError,
    LLMError,
    LLMOutputError,
    LLMTimeoutError,
    LLMTransientError,
)
from kb_ai.llm import structured
from kb_ai.llm._transport import RawReply, Request, Transport
from kb_ai.llm.parse import parse_reply
from kb_ai.llm.store import CachedReply, CallRecord, CallStore, cache_key
from kb_ai.llm.types import Completion, Usage
from kb_ai.settings import Settings

log = logging.getLogger(__name__)

# Statuses that say the request was wrong, not the endpoint: they do not trip the breaker.
REQUEST_FAULT_STATUSES = frozenset({400, 413, 422})


class LLMClient:
    """Implements the :class:`kb_ai.llm.LLM` protocol. Build it with :func:`open_llm`."""

    def __init__(
        self, settings: Settings, transport: Transport, *, db_path: Path | None = None
    ) -> None:
        self.settings = settings
        self.model: str = settings.require_model()
        self.usage = Usage()
        self._transport = transport
        self._store = CallStore(db_path)
        self._mode: str | None = None
        self._failures = 0
        self._last_error: LLMError | None = None
        self._open_since = 0.0  # when the breaker last opened, or let a trial call through
        self._semaphores: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}

    # -- the protocol -----------------------------------------------------------------

    async def complete(
        self,
        messages: list[dict],
        *,
        stage: str,
        schema: dict | None = None,
        schema_name: str = "result",
        max_tokens: int | None = None,
    ) -> Completion:
        mode = self.structured_mode if schema is not None else None
        try:
            return await self._complete(messages, stage, schema, schema_name, max_tokens, mode)
        except LLMError as exc:
            if not (
                mode in ("json_schema", "json_object")
                and exc.status == 400
                and not isinstance(exc, CircuitOpenError)
            ):
                raise
            log.warning(
                "%s refused response_format %s (HTTP 400: %s); asking for JSON in "
                "the prompt instead from now on",
                self.model,
                mode,
                exc.message,
            )
            completion = await self._complete(
                messages, stage, schema, schema_name, max_tokens, "prompt"
            )
            self._mode = "prompt"
            return completion

    async def stream(
        self, messages: list[dict], *, stage: str, max_tokens: int | None = None
    ) -> AsyncIterator[str | Completion]:
        request = self._request(messages, stage, max_tokens, None)
        key = self._key(request, None, None)
        started = time.monotonic()
        hit = await self._store.lookup(key)
        if hit is not None:
            self._log_hit(stage, started)
            yield hit.text
            yield self._cached_completion(hit, None, started)
            return
        for attempt in range(self.settings.max_retries + 1):
            self._check_breaker()
            delivered = False
            try:
                async with self._slot(), aclosing(self._transport.stream(request)) as chunks:
                    deadline = asyncio.get_running_loop().time() + request.timeout
                    while True:
                        try:
                            async with asyncio.timeout_at(deadline):
                                item = await anext(chunks)
                        except StopAsyncIteration:
                            raise LLMTransientError(
                                f"{self.model} ended the reply stream without finishing it",
                                model=self.model,
                            ) from None
                        except TimeoutError:
                            raise self._timeout_error(request, stage) from None
                        if isinstance(item, RawReply):
                            raw = item
                            break
                        delivered = True
                        yield item
            except LLMError as exc:
                if not delivered and exc.retryable and attempt < self.settings.max_retries:
                    await self._backoff(attempt, exc)
                    continue
                self._fail(exc, stage, started)
                if delivered:
                    raise LLMTransientError(
                        f"the reply from {self.model} broke off: {exc.message}",
                        model=self.model,
                        status=exc.status,
                        body=exc.body,
                    ) from exc
                raise
            break
        self._succeed()
        duration = time.monotonic() - started
        reply = CachedReply.of(raw)
        complete = raw.text.strip() and raw.finish_reason != "length"
        usage = self._paid(raw, stage, duration, cache=(key, reply) if complete else None)
        yield Completion(raw.text, None, self.model, usage, False, raw.finish_reason, duration)

    # -- structured output ------------------------------------------------------------

    @property
    def structured_mode(self) -> str:
        """The structured-output mode in use (after "auto" and any fallback)."""
        if self._mode is None:
            setting = self.settings.structured_output
            if setting != "auto":
                self._mode = setting
            else:
                api_base = self.settings.api_base
                supports = None
                if structured.needs_capability_check(self.model, api_base):
                    supports = self._transport.supports_response_schema(self.model)
                self._mode = structured.auto_mode(self.model, api_base, supports)
        return self._mode

    # -- one call, with cache, retries and breaker ----------------------------------------

    async def _complete(
        self,
        messages: list[dict],
        stage: str,
        schema: dict | None,
        schema_name: str,
        max_tokens: int | None,
        mode: str | None,
    ) -> Completion:
        sent, response_format = structured.prepare(messages, mode or "prompt", schema, schema_name)
        request = self._request(sent, stage, max_tokens, response_format)
        key = self._key(request, schema, mode)
        started = time.monotonic()
        hit = await self._store.lookup(key)
        if hit is not None:
            data = parse_reply(hit.text, schema, finish_reason=hit.finish_reason, model=self.model)
            self._log_hit(stage, started)
            return self._cached_completion(hit, data, started)
        raw = await self._send(request, stage, started)
        duration = time.monotonic() - started
        try:
            data = parse_reply(raw.text, schema, finish_reason=raw.finish_reason, model=self.model)
        except LLMOutputError as exc:
            self._paid(raw, stage, duration, error=exc)
            raise
        reply = CachedReply.of(raw)
        usage = self._paid(raw, stage, duration, cache=(key, reply))
        return Completion(raw.text, data, self.model, usage, False, raw.finish_reason, duration)

    async def _send(self, request: Request, stage: str, started: float) -> RawReply:
        for attempt in range(self.settings.max_retries + 1):
            trial = self._check_breaker()
            try:
                async with self._slot():
                    if not trial:  # it may have opened while this call waited for a slot
                        self._check_breaker()
                    try:
                        async with asyncio.timeout(request.timeout):
                            raw = await self._transport.send(request)
                    except TimeoutError:
                        raise self._timeout_error(request, stage) from None
            except CircuitOpenError:
                raise
            except LLMError as exc:
                if exc.retryable and attempt < self.settings.max_retries:
                    await self._backoff(attempt, exc)
                    continue
                self._fail(exc, stage, started)
                raise
            self._succeed()
            return raw
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _backoff(self, attempt: int, exc: LLMError) -> None:
        delay = self.settings.retry_backoff * (2**attempt)
        log.info(
            "%s: %s; retry %d of %d in %.2f s",
            self.model,
            exc.message,
            attempt + 1,
            self.settings.max_retries,
            delay,
        )
        await asyncio.sleep(delay)  # outside the concurrency slot

    def _timeout_error(self, request: Request, stage: str) -> LLMTimeoutError:
        return LLMTimeoutError(
            f"{self.model} did not answer within {request.timeout:g} s ({stage})",
            model=self.model,
            hint=f"raise timeout_{stage} if the model is just slow",
        )

    # -- circuit breaker ----------------------------------------------------------------

    def _check_breaker(self) -> bool:
        """Raise CircuitOpenError while the endpoint is treated as down; True when this
        call is the one let through to try it again after the cooldown."""
        threshold = self.settings.breaker_threshold
        if threshold > 0 and self._failures >= threshold:
            cooldown = self.settings.breaker_cooldown
            now = time.monotonic()
            if cooldown > 0 and now - self._open_since >= cooldown:
                # Half open: this call tries the endpoint; the others wait for its outcome
                # (a success closes the breaker, a failure opens it for another cooldown).
                self._open_since = now
                return True
            where = self.settings.api_base or "its default endpoint"
            last = self._last_error.message if self._last_error else "unknown"
            raise CircuitOpenError(
                f"{self.model} at {where} failed {self._failures} calls in a row "
                f"(last error: {last}); check that it is running and reachable",
                model=self.model,
                status=self._last_error.status if self._last_error else None,
            )
        return False

    def _fail(self, exc: LLMError, stage: str, started: float) -> None:
        if exc.status not in REQUEST_FAULT_STATUSES:
            self._failures += 1
            self._last_error = exc
            if self._failures >= self.settings.breaker_threshold:
                self._open_since = time.monotonic()
        self._store.record(
            CallRecord(
                stage,
                self.model,
                duration_s=time.monotonic() - started,
                ok=False,
                error=_describe(exc),
            )
        )

    def _succeed(self) -> None:
        self._failures = 0

    # -- helpers --------------------------------------------------------------------------

    def _slot(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.get(loop)
        if semaphore is None:
            for old in [lp for lp in self._semaphores if lp.is_closed()]:
                del self._semaphores[old]
            semaphore = asyncio.Semaphore(self.settings.max_concurrency)
            self._semaphores[loop] = semaphore
        return semaphore

    def _request(
        self, messages: list[dict], stage: str, max_tokens: int | None, response_format: dict | None
    ) -> Request:
        return Request(
            model=self.model,
            messages=messages,
            timeout=self.settings.timeout(stage),
            max_tokens=max_tokens,
            response_format=response_format,
            api_base=self.settings.api_base,
            api_key=self.settings.api_key,
            stage=stage,
        )

    def _key(self, request: Request, schema: dict | None, mode: str | None) -> str:
        return cache_key(
            self.model, request.api_base, request.messages, schema, mode, request.max_tokens
        )

    def _paid(
        self,
        raw: RawReply,
        stage: str,
        duration: float,
        error: LLMError | None = None,
        cache: tuple[str, CachedReply] | None = None,
    ) -> Usage:
        """Count and log a call the model answered; ``cache`` its reply if given."""
        usage = Usage(1, raw.prompt_tokens, raw.completion_tokens, raw.cost_usd)
        self.usage = self.usage + usage
        self._store.record(
            CallRecord(
                stage,
                self.model,
                raw.prompt_tokens,
                raw.completion_tokens,
                raw.cost_usd,
                duration,
                cached=False,
                ok=error is None,
                error=_describe(error) if error else None,
            ),
            cache,
        )
        return usage

    def _log_hit(self, stage: str, started: float) -> None:
        self._store.record(
            CallRecord(stage, self.model, duration_s=time.monotonic() - started, cached=True)
        )

    def _cached_completion(self, hit: CachedReply, data: object, started: float) -> Completion:
        return Completion(
            hit.text, data, self.model, Usage(), True, hit.finish_reason, time.monotonic() - started
        )

    async def aclose(self) -> None:
        await self._transport.aclose()
        await self._store.aclose()

    async def __aenter__(self) -> LLMClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _describe(exc: LLMError) -> str:
    status = f" (HTTP {exc.status})" if exc.status else ""
    return f"{type(exc).__name__}{status}: {exc.message}"[:1000]


def open_llm(settings: Settings, *, db_path: Path | None = None) -> LLMClient:
    """The model client for these settings; raises ConfigError when no model is set.

    ``db_path`` is the knowledge base's state.db (call log and response cache); None
    keeps the cache in memory and logs nothing. An OpenAI-compatible server (``openai/<name>``
    with an api_base) is spoken to directly over HTTP unless ``transport`` says litellm:
    litellm cost ~5 ms of event-loop time per call there (bench/compile: efficiency at 16
    calls in flight 0.67 against 0.82), and ~4 s to import for a one-off question.
    ``local/<file.gguf>`` (or local/default) runs the model in this process (llama.cpp).
    """
    model = settings.require_model()
    transport: Transport
    if settings.is_local:
        from kb_ai.llm._local import LocalTransport

        transport = LocalTransport(settings.local_context_tokens)
    elif _speaks_http(settings, model):
        from kb_ai.llm._http import HttpTransport

        transport = HttpTransport()
    else:
        from kb_ai.llm._litellm import LiteLLMTransport

        transport = LiteLLMTransport()
    return LLMClient(settings, transport, db_path=db_path)


def _speaks_http(settings: Settings, model: str) -> bool:
    compatible = model.startswith("openai/") and bool(settings.api_base)
    if settings.transport == "http" and not compatible:
        raise ConfigError(
            "transport = http needs an OpenAI-compatible server",
            hint="set api_base (KB_AI_API_BASE) and a model named openai/<name>, or use transport = auto",
        )
    return compatible and settings.transport != "litellm"
