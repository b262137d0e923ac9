"""A read-only copy of another knowledge base's git repository (``also = ["<git URL>"]``):
cloned on first use; pulled (fast-forward only) once it is older than a given age, by
whoever claims the pull (:func:`claim_pull`), never by two at once.

Through the git command line, never asking for credentials on a terminal: a remote that
needs them fails with git's own message, which the caller shows.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from kb_ai.errors import KbAiError
from wiki.files import atomic_write_text
from wiki.git import network_env

_STAMP = "kb-ai-pulled"  # in the clone's .git: when it was cloned or a pull last began
_PULLING = "kb-ai-pulling"  # in the clone's .git while a pull runs (the claim)
_FAILED = "kb-ai-pull-failed"  # in the clone's .git: why the last pull failed
_TIMEOUT = 120.0


def is_git_url(entry: str) -> bool:
    """Whether an ``also`` entry names a git repository to clone rather than a folder."""
    return "://" in entry or entry.startswith("git@") or entry.rstrip("/").endswith(".git")


def clone(url: str, dest: Path) -> bool:
    """Clone ``url`` into ``dest`` unless a copy is there; True when it cloned. Raises
    KbAiError with git's message when the clone fails."""
    if (dest / ".git").is_dir():
        return False
    dest.parent.mkdir(parents=True, exist_ok=True)
    _git(["clone", "--quiet", "--depth", "1", "--", url, str(dest)], dest.parent, url)
    (dest / ".git" / _STAMP).touch()
    return True


def claim_pull(dest: Path, max_age_s: float) -> bool:
    """Whether the caller is to pull the copy at ``dest`` now: its last pull began over
    ``max_age_s`` ago and no other pull (of this process or another) runs. True claims
    it: the caller must then call :func:`pull`."""
    git_dir = dest / ".git"
    stamp = git_dir / _STAMP
    if not git_dir.is_dir() or (stamp.exists() and time.time() - stamp.stat().st_mtime < max_age_s):
        return False
    claim = git_dir / _PULLING
    try:
        os.close(os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        if time.time() - claim.stat().st_mtime < 2 * _TIMEOUT:
            return False  # another pull runs
        claim.touch()  # one a killed process left: taken over
    except OSError:
        return False
    stamp.touch()  # at most one pull every max_age_s, whether it works or not
    return True


def pull(url: str, dest: Path) -> None:
    """Pull the copy at ``dest`` (claimed with :func:`claim_pull`) and release the claim.
    A failed pull keeps the copy as it is, is recorded (:func:`pull_failure`) and raised."""
    git_dir = dest / ".git"
    try:
        _git(["pull", "--quiet", "--ff-only"], dest, url)
    except KbAiError as exc:
        atomic_write_text(git_dir / _FAILED, exc.message)
        raise
    else:
        (git_dir / _FAILED).unlink(missing_ok=True)
    finally:
        (git_dir / _PULLING).unlink(missing_ok=True)


def pull_failure(dest: Path) -> str | None:
    """What git said when the last pull of the copy at ``dest`` failed (None: it worked)."""
    try:
        return (dest / ".git" / _FAILED).read_text(encoding="utf-8")
    except OSError:
        return None


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
