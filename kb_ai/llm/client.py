"""The client every part of kb-ai talks to models through.

Above a transport (litellm, or plain aiohttp for a fast start) it adds what every call
needs: a per-stage timeout and max_tokens, retries with exponential backoff on timeouts,
429s, 5xx and dropped connections (never on other 4xx; as long as a Retry-After asks,
up to a cap), a circuit breaker that fails a run fast when the endpoint is down or hangs
(:mod:`kb_ai.llm._breaker`), bounded concurrency, structured output with a one-time
fallback to prompt mode, tolerant parsing, bounds on every reply and field, the
response cache (of replies the caller accepted) and the call log.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, aclosing
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
from kb_ai.llm._breaker import Breaker
from kb_ai.llm._slots import Slots
from kb_ai.llm._transport import RawReply, Request, Transport
from kb_ai.llm._turns import caller
from kb_ai.llm.parse import parse_reply
from kb_ai.llm.store import (
    CachedReply,
    CacheReceipt,
    CallRecord,
    CallStore,
    Connect,
    cache_key,
)
from kb_ai.llm.types import Completion, Usage
from kb_ai.settings import Settings
from kb_ai.stages import stage_of

log = logging.getLogger(__name__)


def retry_delay(attempt: int, exc: LLMError, backoff: float, most: float) -> float:
    """Seconds before retry ``attempt + 1``: the doubling backoff, or longer when the
    server asked for it (Retry-After), that request held to ``most``."""
    delay = backoff * (2**attempt)
    if exc.retry_after is not None:
        delay = max(delay, min(exc.retry_after, most))
    return delay


class LLMClient:
    """Implements the :class:`kb_ai.llm.LLM` protocol. Build it with :func:`open_llm`."""

    def __init__(
        self,
        settings: Settings,
        transport: Transport,
        *,
        db_path: Path | None = None,
        connect: Connect | None = None,
    ) -> None:
        self.settings = settings
        self.model: str = settings.require_model()
        self.usage = Usage()
        self._transport = transport
        self._store = CallStore(db_path, connect=connect)
        self._mode: str | None = None
        self.breaker = Breaker(settings, self.model)
        self._slots: dict[asyncio.AbstractEventLoop, Slots] = {}

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
        self,
        messages: list[dict],
        *,
        stage: str,
        max_tokens: int | None = None,
        schema: dict | None = None,
        schema_name: str = "result",
    ) -> AsyncIterator[str | Completion]:
        """Text deltas, then one Completion. With ``schema``: the JSON being written, parsed
        at the end (a refused response_format is learnt by `complete`, not here)."""
        mode = self.structured_mode if schema is not None else None
        sent, response_format = structured.prepare(messages, mode or "prompt", schema, schema_name)
        request = self._request(sent, stage, max_tokens, response_format)
        self._check_prompt(request, stage)
        key = self._key(request, schema, mode)
        started = time.monotonic()
        hit = await self._store.lookup(key)
        if hit is not None and (usable := self._usable_hit(key, hit, schema, stage)) is not None:
            self._log_hit(stage, started)
            yield hit.text
            yield self._cached_completion(key, hit, usable[0], started)
            return
        limit = self.settings.max_reply_chars
        await self._transport.prepare()  # before any attempt's clock starts
        for attempt in range(self.settings.max_retries + 1):
            self.breaker.check()
            delivered = 0
            try:
                async with (
                    self._slot() as sent,
                    aclosing(self._transport.stream(request)) as chunks,
                ):
                    if not getattr(self._transport, "tells_sent", False):
                        sent()
                    deadline = asyncio.get_running_loop().time() + request.timeout
                    while True:
                        try:
                            async with self.breaker.guard(deadline):
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
                        delivered += len(item)
                        if limit and delivered > limit:
                            raise self._too_long(stage, delivered, request)
                        yield item
            except CircuitOpenError:
                raise
            except LLMError as exc:
                if isinstance(exc, LLMTimeoutError):
                    self.breaker.timed_out(exc, stage)
                if self._retry_now(exc, attempt) and not delivered:
                    await self._backoff(attempt, exc)
                    continue
                self._fail(exc, stage, started, count=not isinstance(exc, LLMOutputError))
                if delivered and not isinstance(exc, LLMOutputError):
                    raise LLMTransientError(
                        f"the reply from {self.model} broke off: {exc.message}",
                        model=self.model,
                        status=exc.status,
                        body=exc.body,
                    ) from exc
                raise
            break
        self.breaker.succeeded()
        duration = time.monotonic() - started
        complete = raw.text.strip() and raw.finish_reason != "length"
        if schema is None:
            data, usage = None, self._paid(raw, stage, duration)
        else:
            data, usage = self._parsed(raw, schema, stage, duration, request)
        receipt = CacheReceipt(self._store, key, CachedReply.of(raw)) if complete else None
        yield Completion(
            raw.text, data, self.model, usage, False, raw.finish_reason, duration, receipt
        )

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
        self._check_prompt(request, stage)
        key = self._key(request, schema, mode)
        started = time.monotonic()
        hit = await self._store.lookup(key)
        if hit is not None:
            usable = self._usable_hit(key, hit, schema, stage)
            if usable is not None:
                self._log_hit(stage, started)
                return self._cached_completion(key, hit, usable[0], started)
        raw = await self._send(request, stage, started)
        duration = time.monotonic() - started
        data, usage = self._parsed(raw, schema, stage, duration, request)
        receipt = CacheReceipt(self._store, key, CachedReply.of(raw))
        return Completion(
            raw.text, data, self.model, usage, False, raw.finish_reason, duration, receipt
        )

    def _parsed(
        self, raw: RawReply, schema: dict | None, stage: str, duration: float, request: Request
    ) -> tuple[object, Usage]:
        """A reply's data and cost, logged; one too long or unparsable is logged as failed."""
        try:
            self._check_size(raw.text, stage, request)
            data = parse_reply(
                raw.text, schema, finish_reason=raw.finish_reason, model=self.model, stage=stage
            )
        except LLMOutputError as exc:
            self._paid(raw, stage, duration, error=exc)
            raise
        return data, self._paid(raw, stage, duration)

    def _usable_hit(
        self, key: str, hit: CachedReply, schema: dict | None, stage: str
    ) -> tuple[object] | None:
        """(the parsed data,) of a cached reply, or None when it fails today's checks (a
        reply cached before them, or by a run with looser ones): it is then forgotten."""
        try:
            self._check_size(hit.text, stage, None)
            data = parse_reply(
                hit.text, schema, finish_reason=hit.finish_reason, model=self.model, stage=stage
            )
        except LLMOutputError as exc:
            log.warning("a cached %s reply is not usable (%s); asking again", stage, exc.message)
            self._store.forget(key)
            return None
        return (data,)

    def _check_prompt(self, request: Request, stage: str) -> None:
        limit = self.settings.max_prompt_chars
        if not limit:
            return
        size = sum(_chars(m.get("content")) for m in request.messages)
        if size > limit:
            raise LLMError(
                f"the {stage} prompt is {size:,} characters, over the limit of {limit:,} "
                "(max_prompt_chars); it was not sent",
                model=self.model,
                hint="send less: a smaller chunk_chars, or split the source",
            )

    def _check_size(self, text: str, stage: str, request: Request | None) -> None:
        limit = self.settings.max_reply_chars
        if limit and len(text) > limit:
            raise self._too_long(stage, len(text), request)

    def _too_long(self, stage: str, size: int, request: Request | None) -> LLMOutputError:
        tokens = request.max_tokens if request is not None else None
        asked = f", asked for at most {tokens:,} tokens" if tokens else ""
        return LLMOutputError(
            f"the {stage} reply from {self.model} is {size:,} characters{asked}: over the "
            f"limit of {self.settings.max_reply_chars:,} (max_reply_chars); it is not stored "
            "or sent on",
            model=self.model,
            hint="the model is looping or ignoring max_tokens; raise max_reply_chars only "
            "if replies this long are expected",
        )

    async def _send(self, request: Request, stage: str, started: float) -> RawReply:
        await self._transport.prepare()  # before any attempt's clock starts
        for attempt in range(self.settings.max_retries + 1):
            trial = self.breaker.check()
            try:
                async with self._slot() as sent:
                    if not getattr(self._transport, "tells_sent", False):
                        sent()
                    if not trial:  # it may have opened while this call waited for a slot
                        self.breaker.check()
                    deadline = asyncio.get_running_loop().time() + request.timeout
                    try:
                        async with self.breaker.guard(deadline):
                            raw = await self._transport.send(request)
                    except TimeoutError:
                        raise self._timeout_error(request, stage) from None
            except CircuitOpenError:
                raise
            except LLMError as exc:
                if isinstance(exc, LLMTimeoutError):
                    self.breaker.timed_out(exc, stage)
                if self._retry_now(exc, attempt):
                    await self._backoff(attempt, exc)
                    continue
                unusable = isinstance(exc, LLMOutputError)  # answered: the endpoint is up
                self._fail(exc, stage, started, count=not unusable)
                if unusable:
                    raise LLMOutputError(
                        f"the {stage} reply is refused: {exc.message}",
                        model=exc.model,
                        status=exc.status,
                        hint=exc.hint,
                    ) from exc
                if exc.status == 400 and request.max_tokens and exc.hint is None:
                    exc.hint = (
                        f"if it refuses max_tokens={request.max_tokens} (more than the model "
                        f"or its context allows), lower max_tokens_{stage}; 0 sends none"
                    )
                raise
            self.breaker.succeeded()
            # the call our slot went to sends before this reply is read and checked
            await self._slots_here().sent_first()
            return raw
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _retry_now(self, exc: LLMError, attempt: int) -> bool:
        """Whether to try again: a transient failure, retries left, and the breaker did
        not open on it (a call that tripped it fails with its own error)."""
        return exc.retryable and attempt < self.settings.max_retries and not self.breaker.is_open

    async def _backoff(self, attempt: int, exc: LLMError) -> None:
        delay = retry_delay(
            attempt, exc, self.settings.retry_backoff, self.settings.retry_after_max
        )
        asked = (
            f" (the server asked for {exc.retry_after:g} s)" if exc.retry_after is not None else ""
        )
        log.info(
            "%s: %s; retry %d of %d in %.2f s%s",
            self.model,
            exc.message,
            attempt + 1,
            self.settings.max_retries,
            delay,
            asked,
        )
        await asyncio.sleep(delay)  # outside the concurrency slot

    def _timeout_error(self, request: Request, stage: str) -> LLMTimeoutError:
        return LLMTimeoutError(
            f"{self.model} did not answer within {request.timeout:g} s ({stage})",
            model=self.model,
            hint=f"raise {stage_of(stage).timeout_setting} if the model is just slow",
        )

    # -- circuit breaker ----------------------------------------------------------------

    def _fail(self, exc: LLMError, stage: str, started: float, *, count: bool = True) -> None:
        """Log a call that failed; ``count`` it toward the breaker (a refused or unusable
        reply does not say the endpoint is down)."""
        if count:
            self.breaker.failed(exc)
        self._store.record(
            CallRecord(
                stage,
                self.model,
                duration_s=time.monotonic() - started,
                ok=False,
                error=_describe(exc),
            )
        )

    # -- helpers --------------------------------------------------------------------------

    def _slots_here(self) -> Slots:
        loop = asyncio.get_running_loop()
        slots = self._slots.get(loop)
        if slots is None:
            for old in [lp for lp in self._slots if lp.is_closed()]:
                del self._slots[old]
            slots = self._slots[loop] = Slots(self.settings.max_concurrency)
        return slots

    def _slot(self) -> AbstractAsyncContextManager[Callable[[], None]]:
        """A slot for one call (see kb_ai/llm/_slots.py); a transport that cannot tell
        when its request is written counts as sent at once."""
        return self._slots_here().slot()

    def _request(
        self, messages: list[dict], stage: str, max_tokens: int | None, response_format: dict | None
    ) -> Request:
        return Request(
            model=self.model,
            messages=messages,
            timeout=self.settings.timeout(stage),
            max_tokens=max_tokens if max_tokens is not None else self.settings.max_tokens(stage),
            response_format=response_format,
            api_base=self.settings.api_base,
            api_key=self.settings.api_key,
            max_reply_chars=self.settings.max_reply_chars or None,
            stage=stage,
            caller=caller.get(),
        )

    def _key(self, request: Request, schema: dict | None, mode: str | None) -> str:
        return cache_key(
            self.model, request.api_base, request.messages, schema, mode, request.max_tokens
        )

    def _paid(
        self, raw: RawReply, stage: str, duration: float, error: LLMError | None = None
    ) -> Usage:
        """Count and log a call the model answered."""
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
            )
        )
        return usage

    def _log_hit(self, stage: str, started: float) -> None:
        self._store.record(
            CallRecord(stage, self.model, duration_s=time.monotonic() - started, cached=True)
        )

    def _cached_completion(
        self, key: str, hit: CachedReply, data: object, started: float
    ) -> Completion:
        duration = time.monotonic() - started
        receipt = CacheReceipt(self._store, key, None)
        return Completion(
            hit.text, data, self.model, Usage(), True, hit.finish_reason, duration, receipt
        )

    async def aclose(self) -> None:
        await self._transport.aclose()
        await self._store.aclose()

    async def __aenter__(self) -> LLMClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _chars(content: object) -> int:
    """Characters of a message's content (a string, or a list of text parts)."""
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        return sum(len(str(part.get("text") or "")) for part in content if isinstance(part, dict))
    return 0


def _describe(exc: LLMError) -> str:
    status = f" (HTTP {exc.status})" if exc.status else ""
    return f"{type(exc).__name__}{status}: {exc.message}"[:1000]


def open_llm(
    settings: Settings, *, db_path: Path | None = None, connect: Connect | None = None
) -> LLMClient:
    """The model client for these settings; raises ConfigError when no model is set.

    ``db_path`` is the knowledge base's state.db (call log and response cache); None
    keeps the cache in memory and logs nothing. ``connect``: the log and cache are in
    the database the knowledge base's servers share instead (kb_ai/llm/store.py). An OpenAI-compatible server (``openai/<name>``
    with an api_base) is spoken to directly over HTTP unless ``transport`` says litellm:
    litellm cost ~5 ms of event-loop time per call there (bench/compile: efficiency at 16
    calls in flight 0.67 against 0.82), and ~4 s to import for a one-off question.
    ``local/<file.gguf>`` (or local/default) runs the model in this process (llama.cpp).
    """
    model = settings.require_model()
    transport: Transport
    if settings.is_local:
        from kb_ai.llm._local import LocalTransport

        # prompt states kept for the next process, in an initialised knowledge base only
        states = settings.state_dir / "llm-states" if settings.state_dir.is_dir() else None
        transport = LocalTransport(
            settings.local_context_tokens, settings.local_threads or None, states
        )
    elif _speaks_http(settings, model):
        from kb_ai.llm._http import HttpTransport

        transport = HttpTransport()
    else:
        from kb_ai.llm._litellm import LiteLLMTransport

        transport = LiteLLMTransport()
    return LLMClient(settings, transport, db_path=db_path, connect=connect)


def _speaks_http(settings: Settings, model: str) -> bool:
    compatible = model.startswith("openai/") and bool(settings.api_base)
    if settings.transport == "http" and not compatible:
        raise ConfigError(
            "transport = http needs an OpenAI-compatible server",
            hint="set api_base (KB_AI_API_BASE) and a model named openai/<name>, or use transport = auto",
        )
    return compatible and settings.transport != "litellm"
