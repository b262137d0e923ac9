"""What every handler of the web app works with: the knowledge base opened through the
application layer (kb_ai/service: its settings, the model factory, who acts), the
compile workers and the server's limits. Built once by create_app."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field, replace
from sqlite3 import Connection
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from kb_ai.llm import LLM
from kb_ai.service import OpenKb
from kb_ai.service.fairness import QuestionBuckets
from kb_ai.service.remote import Follower
from kb_ai.settings import Settings
from web.people import visitor
from web.pool import WorkerPool
from wiki import KnowledgeBase, open_state

T = TypeVar("T")


@dataclass(frozen=True)
class Limits:
    """What one request may carry. A text file over ``max_file_bytes``, or a document
    (PDF, Office, archive) over ``max_document_bytes``, is refused by name."""

    max_file_bytes: int
    max_files: int = 20
    max_fields: int = 20
    max_document_bytes: int = 0  # 0: as max_file_bytes

    @property
    def document_bytes(self) -> int:
        return self.max_document_bytes or self.max_file_bytes

    @property
    def max_body_bytes(self) -> int:
        """A multipart submission: every file at the text limit plus one document at its
        own, and the form around them."""
        return self.max_files * self.max_file_bytes + self.document_bytes + 1_000_000

    @property
    def max_json_bytes(self) -> int:
        """A JSON submission: one text at its limit, escaped (``\\u00e9`` is 6 bytes for
        2), and the object around it."""
        return 3 * self.max_file_bytes + 65_536


@dataclass
class Services:
    okb: OpenKb  # the knowledge base as the server opened it, for the server's actor
    limits: Limits
    status_interval: float = 0.5
    pool: WorkerPool | None = None
    follower: Follower | None = None  # follows the wiki remote (kb_ai/service/remote.py)
    background: set[asyncio.Task] = field(default_factory=set)
    questions: QuestionBuckets = field(default_factory=lambda: QuestionBuckets(0))

    @property
    def kb(self) -> KnowledgeBase:
        return self.okb.kb

    @property
    def settings(self) -> Settings:
        return self.okb.settings

    @property
    def llm_factory(self) -> Callable[..., LLM]:
        return self.okb.llm_factory

    @llm_factory.setter
    def llm_factory(self, factory: Callable[..., LLM]) -> None:
        self.okb = replace(self.okb, llm_factory=factory)
        self._chat_llm = None

    def acting(self, request: Request) -> OpenKb:
        """The knowledge base opened for whoever sent ``request``: the signed-in person
        (web/people.py), else the server's actor (create_app's ``actor``)."""
        actor = visitor(request).actor
        return self.okb if actor is None else self.okb.acting_as(actor)

    async def audit(
        self, request: Request, action: str, target: str = "", detail: str = ""
    ) -> None:
        """An audit line for what ``request``'s visitor did, with their address."""
        from kb_ai.service import people

        address = request.client.host if request.client else ""
        await self.run(people.audit, self.acting(request), action, target, detail, address)

    @contextmanager
    def db(self) -> Iterator[Connection]:
        with closing(open_state(self.kb)) as conn:
            yield conn

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Blocking work (SQLite, files, git) off the event loop."""
        return await run_in_threadpool(fn, *args, **kwargs)

    _chat_llm: LLM | None = None

    def open_llm(self) -> LLM:
        return self.okb.open_llm()

    def chat_llm(self) -> LLM:
        """One model client for every answer: its connections are reused (a new client
        costs tens of milliseconds of CPU), and ``max_concurrency`` bounds the calls in
        flight across all chats. Dropped after a model failure (see ``drop_chat_llm``)."""
        if self._chat_llm is None:
            self._chat_llm = self.open_llm()
        return self._chat_llm

    def drop_chat_llm(self, llm: LLM) -> None:
        """Forget a client that saw the model fail, so its circuit breaker (open for good
        once tripped) does not refuse questions after the model is back."""
        if self._chat_llm is llm:
            self._chat_llm = None
            self.keep(asyncio.ensure_future(close_llm(llm)))

    async def aclose(self) -> None:
        if self._chat_llm is not None:
            await close_llm(self._chat_llm)
            self._chat_llm = None

    def wake_workers(self) -> None:
        if self.pool is not None:
            self.pool.wake()

    def keep(self, task: asyncio.Task) -> None:
        """Hold a background task until it ends (the event loop keeps only weak refs)."""
        self.background.add(task)
        task.add_done_callback(self.background.discard)


async def close_llm(llm: object) -> None:
    aclose = getattr(llm, "aclose", None)  # the LLM protocol does not require it
    if aclose is not None:
        await aclose()


def services(request: Request) -> Services:
    return request.app.state.services
