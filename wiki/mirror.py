"""A read-only copy of another knowledge base's git repository (``also = ["<git URL>"]``):
cloned on first use, pulled (fast-forward only) once it is older than a given age.

Through the git command line, never asking for credentials on a terminal: a remote that
needs them fails with git's own message, which the caller shows.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from kb_ai.errors import KbAiError
from wiki.git import network_env

_STAMP = "kb-ai-pulled"  # in the clone's .git: when it was last cloned or pulled
_TIMEOUT = 120.0


def is_git_url(entry: str) -> bool:
    """Whether an ``also`` entry names a git repository to clone rather than a folder."""
    return "://" in entry or entry.startswith("git@") or entry.rstrip("/").endswith(".git")


def mirror(url: str, dest: Path, max_age_s: float) -> str:
    """Clone ``url`` into ``dest``, or pull it when its last pull is older than
    ``max_age_s``; returns what was done: "cloned", "pulled" or "kept". Raises KbAiError
    with git's message when the clone fails; a failed pull keeps the copy as it is and
    raises too (the caller decides whether an old copy will do)."""
    stamp = dest / ".git" / _STAMP
    if not (dest / ".git").is_dir():
        dest.parent.mkdir(parents=True, exist_ok=True)
        _git(["clone", "--quiet", "--depth", "1", "--", url, str(dest)], dest.parent, url)
        stamp.touch()
        return "cloned"
    if stamp.exists() and time.time() - stamp.stat().st_mtime < max_age_s:
        return "kept"
    _git(["pull", "--quiet", "--ff-only"], dest, url)
    stamp.touch()
    return "pulled"


def _git(args: list[str], cwd: Path, url: str) -> None:
    env = {**os.environ, **network_env()}  # as the wiki remote's: no prompt, https or ssh
    try:
        proc = subprocess.run(
            ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=_TIMEOUT,
            check=False,
        )  # fmt: skip
    except FileNotFoundError as exc:
        raise KbAiError("git is not installed", hint="install git") from exc
    except subprocess.TimeoutExpired as exc:
        raise KbAiError(
            f"git {args[0]} of {url} took over {_TIMEOUT:.0f} s", hint="check the network"
        ) from exc
    if proc.returncode != 0:
        said = proc.stderr.strip() or proc.stdout.strip() or f"exit status {proc.returncode}"
        raise KbAiError(
            f"git {args[0]} of {url} failed: {said}",
            hint="check the URL and that this machine may read it (no password is asked)",
        )
