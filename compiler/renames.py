"""What git knows of a file's earlier names: a note moved or renamed in the repository
it lives in (committed, or staged with ``git mv``) is the same document."""

from __future__ import annotations

import subprocess
from collections.abc import Container
from pathlib import Path

#: A git that does not answer in this time is not asked: identity goes on without it.
GIT_TIMEOUT_S = 10.0


def repository_of(path: Path) -> Path | None:
    """The top of the git work tree holding ``path``, or None (no process started)."""
    for folder in path.parents:
        if (folder / ".git").exists():
            return folder
    return None


def renamed_from(path: Path, known_origins: Container[str] | dict[str, str]) -> list[str]:
    """The absolute paths ``path`` had before, newest first, as git's rename detection
    sees them; asked only when some known origin lies in the same repository."""
    root = repository_of(path)
    if root is None:
        return []
    prefix = f"{root}/"
    if not any(str(o).startswith(prefix) for o in known_origins):  # type: ignore[union-attr]
        return []
    rel = path.relative_to(root).as_posix()
    found: list[str] = []
    staged = _git(root, "status", "--porcelain=v1", "-z", "--", ".")
    parts = staged.split("\0")
    for i, entry in enumerate(parts):  # "R  new", then the old path as the next field
        if entry[:1] == "R" and entry[3:] == rel and i + 1 < len(parts):
            found.append(parts[i + 1])
    history = _git(root, "log", "--follow", "-M", "--name-status", "--format=", "--", rel)
    for line in history.splitlines():
        fields = line.split("\t")
        if len(fields) == 3 and fields[0].startswith("R"):
            found.append(fields[1])
    return [str((root / p).resolve()) for p in dict.fromkeys(found)]


def _git(root: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout if done.returncode == 0 else ""
