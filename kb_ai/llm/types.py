"""The types that cross the LLM boundary: what a call cost, what it returned, the protocol."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
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


class Receipt(Protocol):
    """The pending cache entry of one reply: the caller decides whether it was used."""

    def accept(self) -> None: ...

    def reject(self) -> None: ...


@dataclass(frozen=True)
class Completion:
    """One model reply. A cache hit has ``cached=True`` and a zero usage.

    A reply is cached only once the caller has checked it and calls :meth:`accept` (a
    reply that parses but fails the caller's own checks must not be replayed on the next
    run); :meth:`reject` says it failed them, and removes it from the cache if it came
    from there or was accepted before. ``with reply.checked(): ...`` does one or the
    other, by how the block ends.
    """

    text: str
    data: Any | None
    model: str
    usage: Usage
    cached: bool
    finish_reason: str | None
    duration_s: float
    receipt: Receipt | None = field(default=None, compare=False, repr=False)

    def accept(self) -> None:
        """The reply passed the caller's checks: keep it in the response cache."""
        if self.receipt is not None:
            self.receipt.accept()

    def reject(self) -> None:
        """The reply failed a check: never serve it from the cache again (this wins over
        an earlier accept)."""
        if self.receipt is not None:
            self.receipt.reject()

    def checked(self) -> _Checked:
        """Accept the reply when the block ends normally, reject it when the block raises
        an error (a cancelled task decides nothing: the reply is simply not cached)."""
        return _Checked(self)


class _Checked:
    """``with reply.checked():``. The context manager is handed how the block ended
    (nothing is caught here: whatever failed propagates as it was)."""

    def __init__(self, reply: Completion) -> None:
        self.reply = reply

    def __enter__(self) -> Completion:
        return self.reply

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            self.reply.accept()
        elif issubclass(kind, Exception):  # not a cancellation, nor an interrupt
            self.reply.reject()


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
        self,
        messages: list[dict],
        *,
        stage: str,
        max_tokens: int | None = None,
        schema: dict | None = None,
        schema_name: str = "result",
    ) -> AsyncIterator[str | Completion]:
        """Text deltas as the model writes them, then one Completion (with ``schema``,
        the deltas are the JSON being written and the Completion has its parsed data)."""
        ...
