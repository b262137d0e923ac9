"""Which knowledge base an agent session belongs to.

Walking up from the session's working directory, the first of these wins:

- a directory that is itself a knowledge base (``kb-ai.toml`` beside a ``.kb-ai/`` dir);
- a ``.kb-ai`` marker file, written by ``kb-ai hooks install --project``, naming the KB
  (``kb = "path"``, relative to the marker's directory);

and the walk stops at the repository's root. A git worktree is mapped to its main
repository, so every worktree of one repository shares one KB. Last comes
``KB_AI_DIR``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

MARKER = ".kb-ai"


def is_kb(path: Path) -> bool:
    return (path / "kb-ai.toml").is_file() and (path / MARKER).is_dir()


def read_marker(path: Path) -> Path | None:
    """The KB a marker file names, or None if it names none."""
    import tomllib  # only when there is a marker: the hook's start stays short

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    kb = data.get("kb")
    if not isinstance(kb, str) or not kb.strip():
        return None
    target = Path(kb).expanduser()
    return target if target.is_absolute() else (path.parent / target).resolve()


def main_worktree(root: Path) -> Path | None:
    """For a linked worktree (whose ``.git`` is a file), the main repository's root."""
    git = root / ".git"
    if not git.is_file():
        return None
    try:
        line = git.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not line.startswith("gitdir:"):
        return None
    gitdir = (root / line.split(":", 1)[1].strip()).resolve()
    common = gitdir / "commondir"
    try:
        common_dir = (gitdir / common.read_text(encoding="utf-8").strip()).resolve()
    except OSError:
        return None
    return common_dir.parent if common_dir.name == ".git" else None


def _check(directory: Path) -> Path | None:
    if is_kb(directory):
        return directory
    marker = directory / MARKER
    if marker.is_file():
        return read_marker(marker)
    return None


def find_kb(cwd: str | Path, environ: Mapping[str, str] | None = None) -> Path | None:
    """The knowledge base for a session started in ``cwd``, or None."""
    env = os.environ if environ is None else environ
    try:
        here = Path(cwd).expanduser().resolve()
    except OSError:
        here = None
    while here is not None:
        found = _check(here)
        if found is not None:
            return found if is_kb(found) else None
        if (here / ".git").exists():
            main = main_worktree(here)
            found = _check(main) if main is not None else None
            if found is not None and is_kb(found):
                return found
            break
        if here.parent == here:
            break
        here = here.parent
    fallback = env.get("KB_AI_DIR")
    if fallback and is_kb(Path(fallback).expanduser()):
        return Path(fallback).expanduser().resolve()
    return None
