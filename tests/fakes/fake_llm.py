"""An in-process stand-in for kb_ai.llm's client, for unit tests of the pipeline.

    llm = FakeLLM()
    llm.enqueue({"paths": ["wiki/a.md"]}, "plain text", LLMTimeoutError("slow"))
    done = await llm.complete(messages, stage="select", schema=SCHEMA)
    assert done.data == {"paths": ["wiki/a.md"]}
    assert llm.calls[0].stage == "select"

Replies come from the queue in order, then from ``handler(stage, messages, schema)``.
A dict or list is sent as its JSON text; an exception is raised. Text is parsed with
kb_ai.llm.parse, so a reply the real client would refuse is refused here too (field
bounds included). What the caller decided about each reply (accept, reject, nothing) is
in ``llm.calls[i].verdict``, as the real client's cache would see it. ``stream`` hands
its reply over in 8-character chunks (``chunk_delay`` seconds before each: a slow model);
``llm.calls[i].finished`` says whether the whole reply has been handed over yet.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from kb_ai.llm.parse import parse_reply
from kb_ai.llm.types import Completion, Usage

Reply = str | dict | list | BaseException
Handler = Callable[[str, list[dict], dict | None], Reply]


@dataclass
class Call:
    stage: str
    messages: list[dict]
    schema: dict | None
    verdict: str | None = None  # "accepted" | "rejected", as the caller said
    finished: bool = False  # the whole reply was handed over (a stream: its Completion)

    def accept(self) -> None:  # a Receipt: the caller's verdict on this call's reply
        if self.verdict is None:
            self.verdict = "accepted"

    def reject(self) -> None:
        self.verdict = "rejected"


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


class FakeLLM:
    """Implements the LLM protocol without HTTP; records what it was asked."""

    def __init__(
        self,
        handler: Handler | None = None,
        *,
        model: str = "fake/model",
        delay: float = 0.0,
        max_concurrency: int | None = None,
        finish_reason: str = "stop",
        chunk_delay: float = 0.0,
    ) -> None:
        self.model = model
        self.usage = Usage()
        self.handler = handler
        self.delay = delay
        self.finish_reason = finish_reason
        self.chunk_delay = chunk_delay  # seconds before each streamed chunk: a slow model
        self.calls: list[Call] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._queue: deque[Reply] = deque()
        self._max_concurrency = max_concurrency
        self._semaphore: asyncio.Semaphore | None = None

    def enqueue(self, *replies: Reply) -> FakeLLM:
        self._queue.extend(replies)
        return self

    def stages(self) -> list[str]:
        return [c.stage for c in self.calls]

    def _next(self, stage: str, messages: list[dict], schema: dict | None) -> str:
        self.calls.append(Call(stage, messages, schema))
        if self._queue:
            reply = self._queue.popleft()
        elif self.handler is not None:
            reply = self.handler(stage, messages, schema)
        else:
            reply = "ok"
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, dict | list):
            return json.dumps(reply, ensure_ascii=False)
        return reply

    async def _enter(self) -> None:
        if self._max_concurrency is not None:
            if self._semaphore is None:
                self._semaphore = asyncio.Semaphore(self._max_concurrency)
            await self._semaphore.acquire()
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        self.in_flight -= 1
        if self._semaphore is not None:
            self._semaphore.release()

    def _charge(self, messages: list[dict], text: str) -> Usage:
        usage = Usage(1, _tokens(json.dumps(messages, ensure_ascii=False)), _tokens(text), 0.0)
        self.usage = self.usage + usage
        return usage

    async def complete(
        self,
        messages: list[dict],
        *,
        stage: str,
        schema: dict | None = None,
        schema_name: str = "result",
        max_tokens: int | None = None,
    ) -> Completion:
        started = time.monotonic()
        await self._enter()
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            text = self._next(stage, messages, schema)
        finally:
            self._leave()
        call = self.calls[-1]
        usage = self._charge(messages, text)
        data = parse_reply(
            text, schema, finish_reason=self.finish_reason, model=self.model, stage=stage
        )
        duration = time.monotonic() - started
        call.finished = True
        return Completion(text, data, self.model, usage, False, self.finish_reason, duration, call)

    async def stream(
        self,
        messages: list[dict],
        *,
        stage: str,
        max_tokens: int | None = None,
        schema: dict | None = None,
        schema_name: str = "result",
    ) -> AsyncIterator[str | Completion]:
        started = time.monotonic()
        await self._enter()
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            text = self._next(stage, messages, schema)
            call = self.calls[-1]
        finally:
            self._leave()
        for i in range(0, len(text), 8):
            if self.chunk_delay:
                await asyncio.sleep(self.chunk_delay)
            yield text[i : i + 8]
        usage = self._charge(messages, text)
        data = None
        if schema is not None:
            data = parse_reply(
                text, schema, finish_reason=self.finish_reason, model=self.model, stage=stage
            )
        duration = time.monotonic() - started
        call.finished = True
        yield Completion(text, data, self.model, usage, False, self.finish_reason, duration, call)
