"""The small protocol between the client and a transport (litellm, or plain aiohttp).

A transport turns one :class:`Request` into one :class:`RawReply` (or a stream of text
deltas ending in one), and raises only kb-ai's LLM errors: :class:`LLMTimeoutError`,
:class:`LLMTransientError` (worth retrying) or :class:`LLMError` (not). Retries, the
circuit breaker, the cache, the log and parsing live above it, in the client.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Request:
    model: str
    messages: list[dict]
    timeout: float
    max_tokens: int | None = None
    response_format: dict | None = None
    api_base: str | None = None
    api_key: str | None = None
    stage: str = ""  # what the call is for (the local model serves questions first)


@dataclass(frozen=True)
class RawReply:
    text: str
    finish_reason: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


class Transport(Protocol):
    async def send(self, request: Request) -> RawReply: ...

    def stream(self, request: Request) -> AsyncIterator[str | RawReply]:
        """Yield text deltas as they arrive, then exactly one RawReply (the whole text)."""
        ...

    def supports_response_schema(self, model: str) -> bool: ...

    async def aclose(self) -> None: ...
