"""Each compile as Status shows it: a row in the runs table, written as the run goes
(started, each stage with how many items are done, finished), whoever started it."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from contextlib import closing
from typing import Any

from wiki import KnowledgeBase, finish_run, open_state, set_run_stage, start_run

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
    ) -> None:
        self.kb = kb
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
        if self.run_id is None:
            return
        with closing(open_state(self.kb)) as conn:
            finish_run(conn, self.run_id, state, summary, commit)

    def _save(self) -> None:
        if self.run_id is None:
            return
        self._saved_at = self.clock()
        with closing(open_state(self.kb)) as conn:
            set_run_stage(conn, self.run_id, self.stage, self.done, self.total)
