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
    """Write garbage over every byte of ``db`` (and drop its WAL, which would hold the
    newest pages): what a bad disk or a stray ``dd`` leaves."""
    size = max(db.stat().st_size, 8192)
    db.write_bytes(bytes((i * 37 + 11) % 256 for i in range(size)))
    for suffix in ("-wal", "-shm"):
        db.with_name(db.name + suffix).unlink(missing_ok=True)


@contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """``folder`` and every file in it made unwritable for this process. As root (who
    writes through file modes) the files are marked immutable with chattr instead."""
    paths = [folder, *sorted(folder.iterdir())]
    if os.geteuid() == 0:
        if not shutil.which("chattr"):
            pytest.skip("running as root without chattr: cannot make a folder read-only")
        done = subprocess.run(["chattr", "+i", *map(str, paths)], capture_output=True)
        if done.returncode:
            pytest.skip(f"chattr +i is refused here: {done.stderr.decode().strip()}")
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", *map(str, paths)], check=True)
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
