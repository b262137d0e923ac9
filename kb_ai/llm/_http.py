"""A small transport speaking the OpenAI chat-completions wire format over httpx.

Used by ``open_llm`` for ``openai/<name>`` with an api_base (unless ``transport`` says
litellm): a question does not pay ~4 s for importing litellm, and a compile does not pay
~5 ms of event-loop time per call. No price map here: cost is 0.0.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from kb_ai.errors import LLMError, LLMTimeoutError, LLMTransientError
from kb_ai.llm._transport import RawReply, Request

BODY_CHARS = 2000


def wire_model(model: str) -> str:
    """The model name the server knows: litellm's ``openai/`` prefix removed."""
    return model.removeprefix("openai/")


def map_status(status: int, body: str, model: str) -> LLMError:
    """kb-ai's error for an HTTP error status: 408, 429 and 5xx are worth retrying."""
    message = _error_message(body) or f"HTTP {status}"
    if status == 408:
        return LLMTimeoutError(
            f"{model} timed out: {message}", model=model, status=status, body=body[:BODY_CHARS]
        )
    cls = LLMTransientError if status == 429 or status >= 500 else LLMError
    return cls(
        f"{model} failed (HTTP {status}): {message}",
        model=model,
        status=status,
        body=body[:BODY_CHARS],
    )


def map_transport_error(exc: httpx.HTTPError, model: str) -> LLMError:
    if isinstance(exc, httpx.TimeoutException):
        return LLMTimeoutError(f"{model} timed out ({type(exc).__name__})", model=model)
    return LLMTransientError(f"{model} unreachable: {type(exc).__name__}: {exc}", model=model)


def _error_message(body: str) -> str:
    try:
        data = json.loads(body)
    except ValueError:
        return body.strip().splitlines()[0][:300] if body.strip() else ""
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or "")[:300]
    return str(error or "")[:300]


class HttpTransport:
    """One httpx.AsyncClient per event loop (asyncio.run() twice must still work)."""

    def __init__(self) -> None:
        self._clients: dict[asyncio.AbstractEventLoop, httpx.AsyncClient] = {}

    def _client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        for old in [lp for lp in self._clients if lp.is_closed()]:
            del self._clients[old]
        client = self._clients.get(loop)
        if client is None:
            client = self._clients[loop] = httpx.AsyncClient()
        return client

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

    async def send(self, request: Request) -> RawReply:
        url, headers, body = self._prepare(request, stream=False)
        try:
            response = await self._client().post(
                url, json=body, headers=headers, timeout=request.timeout
            )
        except httpx.HTTPError as exc:
            raise map_transport_error(exc, request.model) from exc
        if response.status_code != 200:
            raise map_status(response.status_code, response.text, request.model)
        try:
            data = response.json()
            choice = data["choices"][0]
            text = choice["message"].get("content") or ""
        except (ValueError, LookupError, TypeError, AttributeError) as exc:
            raise LLMTransientError(
                f"{request.model} sent a reply that is not a chat completion",
                model=request.model,
                status=200,
                body=response.text[:BODY_CHARS],
            ) from exc
        usage = data.get("usage") or {}
        return RawReply(
            text=text,
            finish_reason=choice.get("finish_reason"),
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
        )

    async def stream(self, request: Request) -> AsyncIterator[str | RawReply]:
        url, headers, body = self._prepare(request, stream=True)
        parts: list[str] = []
        finish: str | None = None
        prompt_tokens = completion_tokens = 0
        try:
            async with self._client().stream(
                "POST", url, json=body, headers=headers, timeout=request.timeout
            ) as response:
                if response.status_code != 200:
                    text = (await response.aread()).decode("utf-8", "replace")
                    raise map_status(response.status_code, text, request.model)
                async for line in response.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    payload = line[5:].strip()
                    if payload == "[DONE]":
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
        except httpx.HTTPError as exc:
            raise map_transport_error(exc, request.model) from exc
        yield RawReply("".join(parts), finish, prompt_tokens, completion_tokens)

    def supports_response_schema(self, model: str) -> bool:
        return False  # custom endpoints: the client picks json_object before asking

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        client = self._clients.pop(loop, None)
        if client is not None:
            await client.aclose()
