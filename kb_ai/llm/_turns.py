"""Turns at the one local model: a call at a time, and a question before a compile.

llama.cpp runs one sequence at a time, so calls wait for their turn. A compile makes
many long calls; a question asked meanwhile should not wait for all of them. Waiting
calls are served by priority (answering a question first), then in arrival order; the
call running is never interrupted, so a question waits at most for it.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from kb_ai.stages import STAGES

# Stages that answer a question someone is waiting for; every other stage is a compile's.
ANSWERING = frozenset(s.name for s in STAGES.values() if s.answering)
WAIT_SLICE_S = 0.5  # how often a waiting call looks whether it was cancelled


def priority_of(stage: str) -> int:
    return 0 if stage in ANSWERING else 1


class Turns:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._busy = False
        self._waiting: list[tuple[int, int]] = []
        self._seq = itertools.count()

    @contextmanager
    def turn(self, priority: int, cancel: threading.Event | None = None) -> Iterator[bool]:
        """Hold the model for one call. Yields True once it is this call's turn, or False
        (without the turn) when ``cancel`` is set while it waits."""
        ticket = (priority, next(self._seq))
        got = False
        with self._cond:
            heapq.heappush(self._waiting, ticket)
            try:
                while self._busy or self._waiting[0] != ticket:
                    if cancel is not None and cancel.is_set():
                        break
                    self._cond.wait(WAIT_SLICE_S)
                else:
                    self._busy = got = True
            finally:
                self._waiting.remove(ticket)
                heapq.heapify(self._waiting)
                self._cond.notify_all()
        try:
            yield got
        finally:
            if got:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()
