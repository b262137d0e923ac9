"""The small protocol between the client and a transport (litellm, or plain aiohttp).

A transport turns one :class:`Request` into one :class:`RawReply` (or a stream of text
deltas ending in one), and raises only kb-ai's LLM errors: :class:`LLMTimeoutError`,
:class:`LLMTransientError` (worth retrying) or :class:`LLMError` (not). Retries, the
circuit breaker, the cache, the log and parsing live above it, in the client.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime
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
    # A reply longer than this is refused; a transport that reads the body itself stops
    # reading well before a multi-megabyte one is in memory (None: no bound).
    max_reply_chars: int | None = None
    stage: str = ""  # what the call is for (the local model serves questions first)
    caller: str = ""  # who it is for (the local model serves people in turn)


@dataclass(frozen=True)
class RawReply:
    text: str
    finish_reason: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


class Transport(Protocol):
    async def prepare(self) -> None:
        """One-time setup (an import that takes seconds) before a call: the client awaits
        it before it starts a call's clock, so the setup is never taken for a slow model."""
        ...

    async def send(self, request: Request) -> RawReply: ...

    def stream(self, request: Request) -> AsyncIterator[str | RawReply]:
        """Yield text deltas as they arrive, then exactly one RawReply (the whole text)."""
        ...

    def supports_response_schema(self, model: str) -> bool: ...

    async def aclose(self) -> None: ...


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """The seconds a Retry-After header asks for: a number of seconds or an HTTP date
    (RFC 9110); None when absent or unreadable, 0 for a date in the past."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # an HTTP date is GMT, whatever it says
            when = when.replace(tzinfo=UTC)
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds or seconds in (float("inf"), float("-inf")):  # nan, inf
        return None
    return max(0.0, seconds)
