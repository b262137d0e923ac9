"""What every lock of a knowledge base has in common: ``with lock:`` blocks until it is
taken and releases it however the block ends (wiki/lock.py's file locks, the shared
database's advisory locks in wiki/database.py)."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class Held:
    def acquire(self, blocking: bool = True) -> bool:
        raise NotImplementedError

    def release(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
