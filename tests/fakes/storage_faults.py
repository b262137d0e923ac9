"""Real storage faults for the tests: a state.db overwritten with garbage, a state folder
nobody may write, a process whose files cannot grow (what a full disk looks like to it).

Each fault is made with the operating system, not with a stand-in: SQLite meets it as it
would on a broken machine and raises its own error.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def corrupt(db: Path) -> None:
    """Garbage in place of every byte of ``db``, and no WAL (which would hold the newest
    pages): what a bad disk or a stray ``dd`` leaves. The garbage replaces the file, so a
    connection still open (a worker between two statements) cannot write valid pages
    back into it as it closes."""
    size = max(db.stat().st_size, 8192)
    garbage = db.with_name(db.name + ".garbage")
    garbage.write_bytes(bytes((i * 37 + 11) % 256 for i in range(size)))
    for suffix in ("-wal", "-shm"):
        db.with_name(db.name + suffix).unlink(missing_ok=True)
    os.replace(garbage, db)


def read_only(folder: Path):
    """``folder`` and every file in it made unwritable for this process."""
    return unwritable([folder, *sorted(folder.iterdir())])


@contextmanager
def unwritable(paths: list[Path]) -> Iterator[None]:
    """``paths`` made unwritable for this process for the block. As root (who writes
    through file modes) they are marked immutable with chattr instead.

    SQLite's shared-memory file (``-shm``) among them is left as it is: connections
    have it mapped, and a file made read-only by its mode or a read-only mount keeps a
    live mapping writable, but an immutable one does not: the next write to a page of
    it (a reader marking where it reads, once the kernel has written the page back)
    is a SIGBUS that kills the whole process, a fault no real read-only state.db
    makes. The database file and its WAL refuse the writes as they would."""
    paths = [p for p in paths if not p.name.endswith("-shm")]
    if os.geteuid() == 0:
        if not shutil.which("chattr"):
            pytest.skip("running as root without chattr: cannot make a file read-only")
        asked = list(paths)
        for _ in range(5):  # a WAL file may go as its last connection closes: again
            paths = [p for p in asked if p.exists()]
            done = subprocess.run(["chattr", "+i", *map(str, paths)], capture_output=True)
            if not done.returncode:
                break
            subprocess.run(["chattr", "-i", *map(str, paths)], capture_output=True)
        else:
            pytest.skip(f"chattr +i is refused here: {done.stderr.decode().strip()}")
        try:
            yield
        finally:
            left = [str(p) for p in asked if p.exists()]
            subprocess.run(["chattr", "-i", *left], capture_output=True)
        return
    modes = {p: p.stat().st_mode for p in paths}
    for p in reversed(paths):
        p.chmod(0o555 if p.is_dir() else 0o444)
    try:
        yield
    finally:
        for p, mode in modes.items():
            p.chmod(mode)


@contextmanager
def files_cannot_grow(pid: int) -> Iterator[None]:
    """The process ``pid`` may write no byte past the start of any file (RLIMIT_FSIZE
    0): every write fails with EFBIG, as writes fail on a full disk. Lifted after."""
    _, hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (0, hard))
    try:
        yield
    finally:
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (hard, hard))
