"""One compile at a time per knowledge base, across processes (`kb-ai compile`, the
server's workers, agent hooks): an advisory lock on .kb-ai/compile.lock, and with a
shared database an advisory lock in PostgreSQL as well (:func:`compile_lock`)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import TYPE_CHECKING

from kb_ai.errors import StorageError
from wiki.held import Held

if TYPE_CHECKING:
    from wiki.layout import KnowledgeBase


class KbLock(Held):
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


class CompileLock(Held):
    """The one-writer lock of a knowledge base: the file lock on .kb-ai/compile.lock,
    and with a shared database (``database_url``) first a PostgreSQL advisory lock too,
    so one compile writes at a time across every server and worker sharing it. Taken in
    that order always (the database's, then the file's), so a process that knows of no
    database (it holds only the file) and one that does never wait on each other in a
    circle. The same interface as :class:`KbLock`."""

    def __init__(self, kb: KnowledgeBase) -> None:
        from wiki.database import LOCK_COMPILE, Hold, shared_database

        self.file = KbLock(kb.state_dir / "compile.lock")
        db = shared_database(kb)
        self.shared = None if db is None else Hold(db, LOCK_COMPILE, "compile")

    def acquire(self, blocking: bool = True, *, retry: bool = False) -> bool:
        """Take both locks; ``retry``: the caller will try again soon (a failed try keeps
        its database connection for it; :meth:`release` closes it)."""
        if self.shared is not None and not self.shared.acquire(blocking, retry=retry):
            return False
        try:
            if self.file.acquire(blocking):
                return True
        except BaseException:
            if self.shared is not None:
                self.shared.release()
            raise
        if self.shared is not None:
            self.shared.release()
        return False

    def check(self) -> None:
        """Raise StorageError if the shared lock was lost while held: its connection
        dropped (a database restart), the server freed it, and another server may be
        writing now. The file lock cannot be lost so."""
        if self.shared is None or self.shared.held():
            return
        shown = self.shared.db.shown
        raise StorageError(
            f"Lost the compile lock in the shared database {shown}: its connection was"
            " closed (a database restart?), so another compile may be writing; this run"
            " stopped before recording anything and put its articles back as they were",
            path=shown,
            cause="io",
            transient=True,
            hint="nothing to do: queued tasks go back to the queue and compile again;"
            " run kb-ai compile again for a compile of your own",
        )

    def release(self) -> None:
        self.file.release()
        if self.shared is not None:
            self.shared.release()


def compile_lock(kb: KnowledgeBase) -> CompileLock:
    """The lock every compile, review and repair of ``kb`` writes under."""
    return CompileLock(kb)
