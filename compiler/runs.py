"""Each compile as Status shows it: a row in the runs table, written as the run goes
(started, each stage with how many items are done, finished), whoever started it, and
a heartbeat every few seconds while it lives, from a thread of its own (so a run busy
in a long stage still beats): a run killed with kill -9, or on a machine that is gone,
stops beating and shows as died (wiki/state.py)."""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections.abc import Callable
from contextlib import closing
from typing import Any

from kb_ai.errors import StorageError
from wiki import KnowledgeBase, finish_run, open_state, set_run_stage, start_run
from wiki.state import RUN_BEAT_SECONDS, beat_run

log = logging.getLogger(__name__)

#: A count of items done is written at most this often (a new stage at once): each write
#: opens state.db and commits on the event loop, ~2 ms, and written per document it held
#: back the model's other calls (bench.compile.run at 16 in flight).
SAVE_EVERY_S = 0.5


class RunTracker:
    """A progress callback that records the run, then passes each event on."""

    def __init__(
        self,
        kb: KnowledgeBase,
        started_by: str,
        forward: Callable[..., None],
        clock: Callable[[], float] = time.monotonic,
        beat_seconds: float = RUN_BEAT_SECONDS,
    ) -> None:
        self.kb = kb
        self.beat_seconds = beat_seconds
        self._beating: threading.Event | None = None  # set: the heartbeat stops
        self.started_by = started_by
        self.forward = forward
        self.clock = clock
        self.run_id: int | None = None
        self.stage = "starting"
        self.done = 0
        self.total = 0
        self._saved_at = float("-inf")

    def start(self, total: int) -> None:
        self.total = total
        by, actor = self.started_by, self.kb.actor
        if actor is not None and actor.kind == "person":  # Status names who submitted it
            by = f"{actor.name} ({by})"
        with closing(open_state(self.kb)) as conn:
            self.run_id = start_run(conn, by, total, os.getpid())
        self._start_beating(self.run_id)

    def __call__(self, event: str, **data: Any) -> None:
        self.forward(event, **data)
        if event == "stage":
            self.stage, self.done, self.total = data["name"], 0, data.get("total", 0)
        elif event == "advance":
            self.done += 1
            if self.clock() - self._saved_at < SAVE_EVERY_S and self.done < self.total:
                return  # the count shows at the next write (the last one at once)
        elif event == "classify" and self.stage == "extract":
            self.stage = "classify"  # extract and classify overlap: the later one shows
        else:
            return
        self._save()

    def finish(self, state: str, summary: dict[str, Any], commit: str | None) -> None:
        self.stop_beating()
        if self.run_id is None:
            return
        with closing(open_state(self.kb)) as conn:
            finish_run(conn, self.run_id, state, summary, commit)

    def stop_beating(self) -> None:
        """No more heartbeats (the run finished, or ended without saying how: then it
        shows as died once its heartbeat is old, rather than running for ever)."""
        if self._beating is not None:
            self._beating.set()
            self._beating = None

    def _start_beating(self, run_id: int) -> None:
        stop = threading.Event()
        self._beating = stop
        threading.Thread(
            target=_beat,
            args=(weakref.ref(self), self.kb, run_id, stop, self.beat_seconds),
            name=f"kb-ai-run-{run_id}",
            daemon=True,
        ).start()

    def _save(self) -> None:
        if self.run_id is None:
            return
        self._saved_at = self.clock()
        with closing(open_state(self.kb)) as conn:
            set_run_stage(conn, self.run_id, self.stage, self.done, self.total)


def _beat(
    tracker: weakref.ref[RunTracker],
    kb: KnowledgeBase,
    run_id: int,
    stop: threading.Event,
    every: float,
) -> None:
    """The heartbeat of run ``run_id`` until ``stop`` is set, or its tracker is gone (a
    run dropped without finishing: it stops beating, so it shows as died)."""
    while not stop.wait(every) and tracker() is not None:
        try:
            with closing(open_state(kb)) as conn:
                beat_run(conn, run_id)
        except StorageError as exc:  # the database away: the next beat tries again
            log.debug("run %s: heartbeat not written: %s", run_id, exc)
