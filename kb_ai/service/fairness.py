"""Fair use of the model: a token bucket of questions per person, so one agent's loop
cannot take every answer the server gives (``questions_per_minute``; 0: no limit). The
web app's /api/ask and the MCP `ask` tool over HTTP spend from the same buckets.

Each person (or the server's own admin, or the local user) has a bucket holding up to
``questions_per_minute`` questions, refilled at that rate; a question when it is empty
gets 429 with Retry-After: the seconds until the next one fits.
"""

from __future__ import annotations

import threading
import time

from kb_ai.errors import KbAiError


class TooManyQuestionsError(KbAiError):
    """A person asked more than their share (429, with the seconds to wait)."""

    def __init__(self, message: str, retry_after: float, hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.retry_after = retry_after


class QuestionBuckets:
    def __init__(self, per_minute: float) -> None:
        self.capacity = per_minute
        self.rate = per_minute / 60.0  # questions a second
        self._buckets: dict[str, tuple[float, float]] = {}  # who -> (tokens, at)
        self._lock = threading.Lock()

    def take(self, who: str, now: float | None = None) -> None:
        """Spend one of ``who``'s questions, or raise TooManyQuestionsError."""
        if self.capacity <= 0:
            return
        now = now if now is not None else time.monotonic()
        with self._lock:
            tokens, at = self._buckets.get(who, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - at) * self.rate)
            if tokens < 1:
                self._buckets[who] = (tokens, now)
                wait = (1 - tokens) / self.rate
                raise TooManyQuestionsError(
                    f"{who} asked more than {self.capacity:g} questions a minute",
                    retry_after=wait,
                    hint=f"wait {wait:.0f} s, or ask an admin to raise questions_per_minute",
                )
            self._buckets[who] = (tokens - 1, now)
