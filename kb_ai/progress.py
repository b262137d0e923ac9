"""Compile progress on standard error: a redrawn bar on a terminal, lines elsewhere."""

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


class LineProgress:
    """The same events as lines, for output that is not a terminal (a log file, a pipe,
    a script): one line as each stage starts and one per source or article finished, so
    a long compile on a slow model is never silent."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.name = ""
        self.total = 0
        self.done = 0

    def __call__(self, event: str, **data: Any) -> None:
        if event == "stage":
            self.name, self.total, self.done = data["name"], data.get("total", 0), 0
            count = f": {self.total}" if self.total else ""
            self._line(f"{self.name}{count}")
        elif event == "advance":
            self.done += 1
            item = f" {data['item']}" if data.get("item") else ""
            self._line(f"{self.name} {self.done}/{self.total}{item}")
        elif event == "waiting":
            self._line(f"waiting: {data.get('reason', '')}")

    def _line(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()
