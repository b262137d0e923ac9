"""The circuit breaker of one client: when to treat the model's endpoint as down.

It opens after ``breaker_threshold`` calls in a row failed (each after its retries), or
after ``breaker_timeouts`` attempts in a row timed out: a hanging endpoint costs a whole
stage timeout per attempt, so it must not wait for failed calls (an extract call with
its retries took over four timeouts). When it opens, the attempts still waiting on the
endpoint are stopped at once with :class:`CircuitOpenError`, and new calls are refused;
after ``breaker_cooldown`` seconds one call may try the endpoint again. A reply closes it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from kb_ai.errors import CircuitOpenError, LLMError
from kb_ai.settings import Settings
from kb_ai.stages import stage_of

# Statuses that say the request was wrong, not the endpoint: they do not trip the breaker.
REQUEST_FAULT_STATUSES = frozenset({400, 413, 422})


class _Attempt:
    """One request waiting on the endpoint, which the breaker can stop."""

    __slots__ = ("loop", "timeout", "stopped")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.timeout: asyncio.Timeout | None = None
        self.stopped = False

    def stop(self) -> None:
        """Expire its timeout now (from its own loop's thread)."""
        self.stopped = True
        timeout = self.timeout
        if timeout is not None and not timeout.expired():
            timeout.reschedule(self.loop.time())


class Breaker:
    def __init__(self, settings: Settings, model: str) -> None:
        self.settings = settings
        self.model = model
        self.failures = 0  # calls in a row that failed for good
        self.timeouts = 0  # attempts in a row that timed out
        self.slow_stage = ""  # the stage of the last of them
        self.last_error: LLMError | None = None
        self._open_since = 0.0  # when it last opened, or let a trial call through
        self._attempts: set[_Attempt] = set()

    @property
    def is_open(self) -> bool:
        """Whether the endpoint is treated as down (a trial may still be let through)."""
        threshold, most_timeouts = self.settings.breaker_threshold, self.settings.breaker_timeouts
        return (threshold > 0 and self.failures >= threshold) or (
            most_timeouts > 0 and self.timeouts >= most_timeouts
        )

    def check(self) -> bool:
        """Raise CircuitOpenError while the endpoint is treated as down; True when this
        call is the one let through to try it again after the cooldown."""
        if not self.is_open:
            return False
        cooldown = self.settings.breaker_cooldown
        now = time.monotonic()
        if cooldown > 0 and now - self._open_since >= cooldown:
            # Half open: this call tries the endpoint; the others are refused until its
            # outcome (a reply closes the breaker, a failure opens it for another cooldown).
            self._open_since = now
            return True
        raise self.open_error()

    def open_error(self) -> CircuitOpenError:
        where = self.settings.api_base or "its default endpoint"
        last = self.last_error.message if self.last_error else "unknown"
        most_timeouts = self.settings.breaker_timeouts
        if most_timeouts > 0 and self.timeouts >= most_timeouts:
            what = f"did not answer {self.timeouts} times in a row"
            setting = stage_of(self.slow_stage).timeout_setting if self.slow_stage else None
            hint = (
                f"or, if it is only slow, raise {setting or 'its timeout'} or lower max_concurrency"
            )
        else:
            what = f"failed {self.failures} calls in a row"
            hint = None
        return CircuitOpenError(
            f"{self.model} at {where} {what} (last error: {last}); "
            "check that it is running and reachable",
            model=self.model,
            status=self.last_error.status if self.last_error else None,
            hint=hint,
        )

    def failed(self, exc: LLMError) -> None:
        """A call failed for good (its retries spent)."""
        if exc.status in REQUEST_FAULT_STATUSES:
            return
        self.failures += 1
        self.last_error = exc
        threshold = self.settings.breaker_threshold
        if threshold > 0 and self.failures >= threshold:
            self._open()

    def timed_out(self, exc: LLMError, stage: str) -> None:
        """An attempt of ``stage`` got no reply within its timeout."""
        self.timeouts += 1
        self.slow_stage = stage
        self.last_error = exc
        most = self.settings.breaker_timeouts
        if most > 0 and self.timeouts >= most:
            self._open()

    def succeeded(self) -> None:
        self.failures = 0
        self.timeouts = 0

    def _open(self) -> None:
        self._open_since = time.monotonic()
        running = asyncio.get_running_loop()
        for attempt in list(self._attempts):
            if attempt.loop is running:
                attempt.stop()
            elif not attempt.loop.is_closed():
                attempt.loop.call_soon_threadsafe(attempt.stop)

    @asynccontextmanager
    async def guard(self, deadline: float) -> AsyncIterator[None]:
        """Bound an attempt by ``deadline`` (the loop's clock): TimeoutError past it, or
        CircuitOpenError when the breaker opens meanwhile."""
        attempt = _Attempt(asyncio.get_running_loop())
        self._attempts.add(attempt)
        try:
            async with asyncio.timeout_at(deadline) as timeout:
                attempt.timeout = timeout
                yield
        except TimeoutError:
            if attempt.stopped:
                raise self.open_error() from None
            raise
        finally:
            self._attempts.discard(attempt)
