"""Files: writes that never leave half a file behind, and checksums."""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
from pathlib import Path


def sha256_bytes(data: bytes) -> str:
    """The hex SHA-256 of ``data`` (what raw sources record as their checksum)."""
    return hashlib.sha256(data).hexdigest()


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never half.

    The bytes go to a temporary file in the same directory, are flushed to disk, and the
    temporary file is renamed over ``path``. Missing parent directories are created. On
    any failure the temporary file is removed and ``path`` is left as it was.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    fd = _create_beside(tmp, flags)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if path.exists():
            os.chmod(tmp, stat.S_IMODE(path.stat().st_mode))
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _create_beside(tmp: Path, flags: int) -> int:
    # Another thread deleting the last article of a type folder removes the emptied
    # folder (wiki.articles.delete_article) while a compile's threaded writes go on. That
    # removal can land between making the folder and opening the file in it
    # (FileNotFoundError) or inside mkdir itself, after it found the folder there and
    # before it checked that it is one (FileExistsError): either way, make it again.
    for attempt in range(5):
        try:
            tmp.parent.mkdir(parents=True, exist_ok=True)
            # os.open with 0o666 lets the umask decide the mode, as for any new file
            return os.open(tmp, flags, 0o666)
        except (FileNotFoundError, FileExistsError):
            if attempt == 4:
                raise
    raise AssertionError("unreachable")


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` as UTF-8 (newlines untranslated) with :func:`atomic_write_bytes`."""
    atomic_write_bytes(path, text.encode("utf-8"))


def _fsync_dir(directory: Path) -> None:
    # Makes the rename itself durable. Not every platform can open a directory.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
