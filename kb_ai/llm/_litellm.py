"""The litellm transport: the only module that imports litellm, and only when first used.

``import litellm`` takes seconds and, without LITELLM_LOCAL_MODEL_COST_MAP, fetches a
price map from the internet; so it happens on the first call, never at import.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import logging
import os
from collections.abc import AsyncIterator
from types import CodeType
from typing import Any

from kb_ai.errors import LLMError, LLMTimeoutError, LLMTransientError
from kb_ai.llm._transport import RawReply, Request, parse_retry_after

BODY_CHARS = 2000
# How long a cancelled call waits at most for litellm's executor step (see acompletion).
STEP_GRACE_S = 10.0

log = logging.getLogger(__name__)


def _litellm() -> Any:
    global _FROZEN
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    if not _FROZEN:
        # litellm brings ~340,000 objects that live as long as the process: out of the
        # collector's sight, a full collection takes ~15 ms instead of 130-180 ms. One
        # came every few compiles and held the event loop, and every call in flight.
        gc.freeze()
        _FROZEN = True
    return litellm


_FROZEN = False


def map_error(exc: BaseException, model: str) -> LLMError | None:
    """kb-ai's error for a litellm exception, chosen by its type; None if not litellm's."""
    lm = _litellm()
    import httpx
    import openai

    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    body = str(getattr(exc, "message", None) or exc)[:BODY_CHARS]
    short = body.splitlines()[0][:300] if body else type(exc).__name__
    wait = retry_after(exc)
    # Timeout subclasses APIConnectionError, so it is checked first.
    if isinstance(exc, lm.Timeout):
        return LLMTimeoutError(f"{model} timed out: {short}", model=model, status=status, body=body)
    transient = (
        lm.RateLimitError,
        lm.InternalServerError,
        lm.ServiceUnavailableError,
        lm.BadGatewayError,
        lm.APIConnectionError,
    )
    if isinstance(exc, transient):
        return LLMTransientError(
            f"{model} failed: {short}", model=model, status=status, body=body, retry_after=wait
        )
    if isinstance(exc, openai.OpenAIError):  # the base of every litellm API error
        cls = LLMTransientError if status is not None and status >= 500 else LLMError
        return cls(
            f"{model} failed: {short}", model=model, status=status, body=body, retry_after=wait
        )
    if isinstance(exc, httpx.TimeoutException):
        return LLMTimeoutError(f"{model} timed out", model=model, body=body)
    if isinstance(exc, httpx.TransportError):
        return LLMTransientError(f"{model} unreachable: {short}", model=model, body=body)
    return None


async def acompletion(lm: Any, **kwargs: Any) -> Any:
    """``litellm.acompletion(**kwargs)``, safe to cancel.

    litellm 1.110's acompletion runs completion() in a thread (run_in_executor), then
    awaits the coroutine that completion() returns. A cancel in between loses that
    coroutine, and Python warns "coroutine 'OpenAIChatCompletion.acompletion' was never
    awaited". So a cancel (a timeout, the breaker, Ctrl-C) that comes during that step
    waits for the step to end: it is local work, and no request has been sent yet. Then
    the cancel reaches the call, which is now waiting on the model.
    """
    call = asyncio.ensure_future(lm.acompletion(**kwargs))
    try:
        return await asyncio.shield(call)  # a bare await would cancel the call at once
    except asyncio.CancelledError:
        # If a later litellm moves this function, the call is cancelled at once, as before.
        function = getattr(getattr(lm, "main", None), "acompletion", None)
        step = getattr(inspect.unwrap(function), "__code__", None) if function else None
        loop = asyncio.get_running_loop()
        until = loop.time() + STEP_GRACE_S
        try:
            while _in_executor_step(call, step) and loop.time() < until:
                await asyncio.sleep(0.005)
        finally:
            call.cancel()
        raise


def _in_executor_step(call: asyncio.Future, step: CodeType | None) -> bool:
    """Whether ``call`` waits in litellm's executor step: its innermost coroutine runs
    ``step`` (litellm.main.acompletion) and awaits a future, not another coroutine."""
    awaited: Any = call.get_coro() if isinstance(call, asyncio.Task) else None
    while inspect.iscoroutine(awaited):
        inner = awaited.cr_await
        if not inspect.iscoroutine(inner):
            return step is not None and awaited.cr_code is step and inner is not None
        awaited = inner
    return False


def retry_after(exc: BaseException) -> float | None:
    """The seconds a failed response's Retry-After asked for: litellm keeps the headers
    on its exceptions (``litellm_response_headers``), openai's on ``response``."""
    for headers in (
        getattr(exc, "litellm_response_headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
    ):
        if headers is None or not hasattr(headers, "get"):
            continue
        value = headers.get("retry-after") or headers.get("Retry-After")
        if value is not None:
            return parse_retry_after(str(value))
    return None


class LiteLLMTransport:
    """Calls litellm.acompletion with its own retries off (the client retries)."""

    def _kwargs(self, request: Request) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": request.model,
            "messages": request.messages,
            "timeout": request.timeout,
            "temperature": 0,
            "num_retries": 0,
        }
        if request.api_base:
            kwargs["api_base"] = request.api_base
        if request.api_key:
            kwargs["api_key"] = request.api_key
        if request.max_tokens:
            kwargs["max_tokens"] = request.max_tokens
        if request.response_format is not None:
            kwargs["response_format"] = request.response_format
        return kwargs

    async def prepare(self) -> None:
        # ``import litellm`` took 8 s on a loaded machine. Inside a call's timeout it timed
        # out the first call of a process, and litellm 1.110 dropped the coroutine that its
        # executor step had made ("coroutine 'OpenAIChatCompletion.acompletion' was never
        # awaited"): acompletion awaits run_in_executor(completion), and a cancel there loses
        # the coroutine completion() returns.
        _litellm()

    async def send(self, request: Request) -> RawReply:
        lm = _litellm()
        try:
            response = await acompletion(lm, **self._kwargs(request))
        except Exception as exc:
            mapped = map_error(exc, request.model)
            if mapped is None:
                raise
            raise mapped from exc
        choice = response.choices[0]
        usage = getattr(response, "usage", None)
        return RawReply(
            text=choice.message.content or "",
            finish_reason=choice.finish_reason,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            cost_usd=self._cost(request, response),
        )

    def _cost(self, request: Request, response: Any) -> float:
        if request.api_base and request.model.startswith("openai/"):
            # A self-hosted OpenAI-compatible server has no price in litellm's map, and
            # looking that up cost ~1.4 ms of event-loop time per call.
            return 0.0
        lm = _litellm()
        try:
            return float(lm.completion_cost(completion_response=response) or 0.0)
        except (
            lm.ModelNotMappedError,
            lm.NotFoundError,
            lm.BadRequestError,
            LookupError,
            ValueError,
            TypeError,
            AttributeError,
        ) as exc:
            # Unknown models (any OpenAI-compatible server) have no price: cost 0.
            log.debug("no cost for %s: %s", getattr(response, "model", "?"), exc)
            return 0.0

    async def stream(self, request: Request) -> AsyncIterator[str | RawReply]:
        lm = _litellm()
        parts: list[str] = []
        finish: str | None = None
        prompt_tokens = completion_tokens = 0
        try:
            response = await acompletion(
                lm, **self._kwargs(request), stream=True, stream_options={"include_usage": True}
            )
            async for chunk in response:
                usage = getattr(chunk, "usage", None)
                if usage:
                    prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
                    completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
                if not chunk.choices:
                    continue
                choice = chunk.choices[0]
                finish = choice.finish_reason or finish
                delta = getattr(choice.delta, "content", None)
                if delta:
                    parts.append(delta)
                    yield delta
        except Exception as exc:
            mapped = map_error(exc, request.model)
            if mapped is None:
                raise
            raise mapped from exc
        if finish is None:  # litellm gives every finished reply a finish_reason
            raise LLMTransientError(
                f"{request.model} ended the reply stream before the reply was finished",
                model=request.model,
            )
        yield RawReply("".join(parts), finish, prompt_tokens, completion_tokens, 0.0)

    def supports_response_schema(self, model: str) -> bool:
        # litellm's capability map; it answers False (and does not raise) when unsure.
        return bool(_litellm().supports_response_schema(model=model))

    async def aclose(self) -> None:
        return None
