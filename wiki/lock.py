"""One compile at a time per knowledge base, across processes (`kb-ai compile`, the
server's workers, agent hooks): an advisory lock on .kb-ai/compile.lock."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType


class KbLock:
    """``with KbLock(kb.state_dir / "compile.lock"):`` blocks until no one else holds it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self, blocking: bool = True, *, shared: bool = False) -> bool:
        """Take the lock (shared: many holders at once, none exclusive)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
            fcntl.flock(fd, mode | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> KbLock:
        self.acquire()
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
