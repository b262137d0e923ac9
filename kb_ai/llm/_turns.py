"""Turns at the one local model: a call at a time, a question before a compile, and the
people waiting served in turn.

llama.cpp runs one sequence at a time, so calls wait for their turn. A compile makes
many long calls; a question asked meanwhile should not wait for all of them. Waiting
calls are served by priority (answering a question first); within a priority, by
round: each caller's calls take rounds one after another (a caller with ten calls
waiting holds the next ten rounds of theirs), and a caller who just arrived starts at
the round being served, so people are served in turn rather than in arrival order, and
one person's loop of questions (or compile of a thousand documents) does not hold
everyone else back. Arrival order breaks ties. The call running is never interrupted.

Who is calling is the ``caller`` context variable (:func:`calling_as`), which the
application layer sets for each question and compile; calls without one share the
empty name.
"""

from __future__ import annotations

import contextvars
import heapq
import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from kb_ai.stages import STAGES

# Stages that answer a question someone is waiting for; every other stage is a compile's.
ANSWERING = frozenset(s.name for s in STAGES.values() if s.answering)
WAIT_SLICE_S = 0.5  # how often a waiting call looks whether it was cancelled

#: who the model calls made in this context are for (a person's name, an agent's...)
caller: contextvars.ContextVar[str] = contextvars.ContextVar("kb_ai_caller", default="")


@contextmanager
def calling_as(name: str) -> Iterator[None]:
    """Model calls made inside (and in the tasks started inside) are ``name``'s."""
    token = caller.set(name)
    try:
        yield
    finally:
        with suppress(ValueError):  # left in another context (a generator closed elsewhere)
            caller.reset(token)


def priority_of(stage: str) -> int:
    return 0 if stage in ANSWERING else 1


class Turns:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._busy = False
        self._waiting: list[tuple[int, int, int]] = []  # (priority, round, arrival)
        self._seq = itertools.count()
        self._round = 0  # the round of the call served last
        self._next: dict[tuple[int, str], int] = {}  # (priority, caller) -> their next round

    @contextmanager
    def turn(
        self, priority: int, cancel: threading.Event | None = None, who: str = ""
    ) -> Iterator[bool]:
        """Hold the model for one call of ``who``. Yields True once it is this call's
        turn, or False (without the turn) when ``cancel`` is set while it waits."""
        got = False
        with self._cond:
            key = (priority, who)
            turn_round = max(self._next.get(key, 0), self._round)
            self._next[key] = turn_round + 1
            ticket = (priority, turn_round, next(self._seq))
            heapq.heappush(self._waiting, ticket)
            try:
                while self._busy or self._waiting[0] != ticket:
                    if cancel is not None and cancel.is_set():
                        break
                    self._cond.wait(WAIT_SLICE_S)
                else:
                    self._busy = got = True
                    self._round = max(self._round, turn_round)
            finally:
                self._waiting.remove(ticket)
                heapq.heapify(self._waiting)
                if not got and self._next.get(key) == turn_round + 1:
                    self._next[key] = turn_round  # a cancelled call gives its round back
                for name in [k for k, n in self._next.items() if n <= self._round]:
                    del self._next[name]  # as if new: they start at the round served
                self._cond.notify_all()
        try:
            yield got
        finally:
            if got:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()
