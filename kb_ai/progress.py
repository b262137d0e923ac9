"""A one-line progress display on standard error, for interactive terminals only."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO


class StageProgress:
    """Receives the compiler's progress events and draws `extract 3/10 ▕███   ▏`."""

    def __init__(self, enabled: bool, stream: TextIO | None = None, width: int = 24) -> None:
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.width = width
        self.name = ""
        self.total = 0
        self.done = 0
        self._last = 0.0

    def __call__(self, event: str, **data: Any) -> None:
        if event == "stage":
            self._newline()
            self.name, self.total, self.done = data["name"], data["total"], 0
        elif event == "advance":
            self.done += 1
        self._draw(force=event == "stage" or self.done == self.total)

    def _draw(self, force: bool = False) -> None:
        if not self.enabled or not self.total:
            return
        now = time.monotonic()
        if not force and now - self._last < 0.1:
            return
        self._last = now
        filled = int(self.width * self.done / self.total)
        bar = "█" * filled + " " * (self.width - filled)
        self.stream.write(f"\r{self.name:<8} {self.done}/{self.total} ▕{bar}▏")
        self.stream.flush()

    def _newline(self) -> None:
        if self.enabled and self.total:
            self.stream.write("\n")
            self.stream.flush()

    def __enter__(self) -> StageProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self._newline()
        self.total = 0
