"""The types that cross the LLM boundary: what a call cost, what it returned, the protocol."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Usage:
    """Calls, tokens and cost, summed with ``+``."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.calls + other.calls,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cost_usd + other.cost_usd,
        )

    def as_dict(self) -> dict:
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": self.cost_usd,
        }


@dataclass(frozen=True)
class Completion:
    """One model reply. A cache hit has ``cached=True`` and a zero usage."""

    text: str
    data: Any | None
    model: str
    usage: Usage
    cached: bool
    finish_reason: str | None
    duration_s: float


class LLM(Protocol):
    """What the pipeline codes against: the real client and tests' FakeLLM both fit."""

    model: str
    usage: Usage

    async def complete(
        self,
        messages: list[dict],
        *,
        stage: str,
        schema: dict | None = None,
        schema_name: str = "result",
        max_tokens: int | None = None,
    ) -> Completion: ...

    def stream(
        self, messages: list[dict], *, stage: str, max_tokens: int | None = None
    ) -> AsyncIterator[str | Completion]: ...
