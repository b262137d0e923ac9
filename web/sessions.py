"""Signed-in browsers: an expiring, signed session cookie in place of the token, and
failed sign-ins slowed down per address.

The cookie names whose token signed in (its public id, or ``admin`` for
``KB_AI_TOKEN``) and when it expires, signed with a key of the knowledge base (derived
from its page secret, web/csrf.py); never the token itself. It is HttpOnly,
SameSite=Strict, and Secure when the page came over https. A session ends when it
expires, or at once when its token is revoked or its person removed (the guard asks the
people each time, web/people.py).
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time

COOKIE = "kb_ai_session"
LIFETIME = 12 * 3600  # seconds a sign-in lasts
# After a failed sign-in, an address waits FIRST_WAIT seconds before the next, twice as
# long after each further failure, up to MAX_WAIT; a sign-in that works clears it.
FIRST_WAIT = 1.0
MAX_WAIT = 300.0
# Wrong bearer tokens (or token cookies) from one address: this many in a row are free,
# then each waits as a failed sign-in does, so that wrong tokens cannot keep the server
# computing scrypt hashes (tens to hundreds of milliseconds of CPU each).
FREE_TOKEN_FAILURES = 5


class Sessions:
    def __init__(self, page_secret: str, lifetime: int = LIFETIME) -> None:
        self.key = hashlib.sha256(b"kb-ai session\0" + page_secret.encode()).digest()
        self.lifetime = lifetime

    def issue(self, holder: str, *, now: float | None = None) -> str:
        """A cookie value for ``holder`` (a token id, or "admin")."""
        expires = int((now if now is not None else time.time()) + self.lifetime)
        body = f"{holder}.{expires}"
        return f"{body}.{self._sign(body)}"

    def holder(self, value: str, *, now: float | None = None) -> str | None:
        """Whose session ``value`` is, if it is signed by us and not expired."""
        body, _, signature = value.rpartition(".")
        holder, _, expires = body.partition(".")
        if not (holder and expires.isdigit()) or not hmac.compare_digest(
            signature, self._sign(body)
        ):
            return None
        return holder if int(expires) > (now if now is not None else time.time()) else None

    def cookie(self, value: str, *, secure: bool) -> str:
        flags = "; Secure" if secure else ""
        return (
            f"{COOKIE}={value}; Path=/; Max-Age={self.lifetime}; HttpOnly; SameSite=Strict{flags}"
        )

    def _sign(self, body: str) -> str:
        return hmac.new(self.key, body.encode(), hashlib.sha256).hexdigest()


class SignInThrottle:
    """Failed sign-ins (or wrong tokens) per address, in memory: how long each must wait
    to try again. ``free``: failures in a row that cost no wait (a typo fixed at once)."""

    def __init__(self, free: int = 0) -> None:
        self.free = free
        self._failed: dict[str, tuple[int, float]] = {}  # address -> (failures, may retry at)
        self._lock = threading.Lock()

    def wait(self, address: str, now: float | None = None) -> float:
        """Seconds ``address`` must wait before its next sign-in (0: it may try)."""
        now = now if now is not None else time.monotonic()
        with self._lock:
            _, until = self._failed.get(address, (0, 0.0))
        return max(0.0, until - now)

    def failed(self, address: str, now: float | None = None) -> None:
        now = now if now is not None else time.monotonic()
        with self._lock:
            count = self._failed.get(address, (0, 0.0))[0] + 1
            over = count - self.free
            wait = min(FIRST_WAIT * 2 ** (over - 1), MAX_WAIT) if over > 0 else 0.0
            self._failed[address] = (count, now + wait)
            if len(self._failed) > 10_000:  # a flood of addresses: forget the oldest
                self._failed.pop(next(iter(self._failed)))

    def succeeded(self, address: str) -> None:
        with self._lock:
            self._failed.pop(address, None)
