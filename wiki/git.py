"""Git: the history of the knowledge base, through the git command line."""

from __future__ import annotations

import functools
import os
import re
import subprocess
from pathlib import Path
from typing import Protocol

from kb_ai.errors import KbAiError, NotFoundError, UsageError
from wiki.actors import Actor


class Repository(Protocol):
    """What git needs of a knowledge base (wiki.layout.KnowledgeBase is one, and sits
    above this module: creating a knowledge base makes its first commit)."""

    @property
    def root(self) -> Path: ...

    @property
    def actor(self) -> Actor | None: ...

    def resolve(self, rel: str, *, under: str = "wiki") -> Path: ...


#: What kb-ai versions; everything else in the KB directory is left to the user.
#: bases/ keeps kb-ai's own last version of each article that holds a hand edit
#: (the base of the next three-way merge, see wiki/hand_edits.py).
VERSIONED = (
    "raw", "extraction", "wiki", "bases", "index", "lessons", "log.md", "kb-ai.toml",
    ".gitignore",
)  # fmt: skip
#: Parts made only once needed (bases/ by the first merge of a hand edit, lessons/ by the
#: first session that teaches one): their absence is no sign of a deletion.
_MADE_WHEN_NEEDED = ("bases", "lessons")
#: The trailer every commit kb-ai makes itself carries: what a commit without it changed
#: in an article is a person's (wiki/hand_edits.py).
TRAILER = "Kb-Ai-Commit"

KB_AI_IDENTITY = ("-c", "user.name=kb-ai", "-c", "user.email=kb-ai@localhost")

_REV = re.compile(r"[0-9A-Za-z][0-9A-Za-z._/~^-]*")

#: Every ``git add`` writes the blobs it hashes into one pack file, not one file each
#: (git streams a blob over core.bigFileThreshold into a pack; the setting lives only in
#: the add's own command line, where nothing is diffed). A loose object is a directory,
#: a temporary file, a link and an unlink: ~2 ms of the kernel's time each on the disks
#: measured here, and a compile of 38 sources adds ~120 (adding 76 raw copies and
#: extractions took 194 ms, 18 ms into a pack). git gc merges the packs, as it packs
#: loose objects.
_ADD_INTO_PACK = ("-c", "core.bigFileThreshold=1")


#: git must never ask for a password or a host key: a server has no one to answer.
QUIET_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "SSH_ASKPASS": "true"}
_BATCH_SSH = "ssh -o BatchMode=yes -o ConnectTimeout=15"


def network_env() -> dict[str, str]:
    """What a git command that talks to a remote (a push, a fetch, a clone, a mirror's
    pull) adds to the environment: no prompt for a password, a passphrase or a host key,
    over https or ssh, and a bounded ssh connect. A ``GIT_SSH_COMMAND`` of the user's
    own wins (it may name a key)."""
    env = dict(QUIET_ENV)
    if "GIT_SSH_COMMAND" not in os.environ:
        env["GIT_SSH_COMMAND"] = _BATCH_SSH
    return env


class GitTimeoutError(KbAiError):
    """A git command (one that talks to a remote) gave no answer in time."""


def git(kb: Repository, *args: str) -> str:
    """Run ``git <args>`` in the knowledge base and return its standard output.

    A commit made for an actor (``kb.actor``) has the actor as author and kb-ai as
    committer; otherwise it uses kb-ai's own identity when the environment configures
    none, so commits work on a fresh machine. A failure becomes a :class:`KbAiError` carrying git's message.
    """
    return _run(kb, args).stdout


def _run(
    kb: Repository,
    args: tuple[str, ...],
    check: bool = True,
    stdin: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess:
    packed = _ADD_INTO_PACK if _subcommand(args) == "add" else ()
    command = ["git", *_identity_args(str(kb.root), *_identity_env()), *packed, *args]
    actor = getattr(kb, "actor", None)
    extra = {**(actor.git_env() if actor is not None else {}), **(env or {})}
    env = {**os.environ, **extra} if extra else None
    try:
        proc = subprocess.run(
            command, cwd=kb.root, input=stdin, capture_output=True, text=True, check=False,
            env=env, timeout=timeout,
        )  # fmt: skip
    except FileNotFoundError as exc:
        raise KbAiError(
            "git is not installed", hint="install git; kb-ai keeps its history in it"
        ) from exc
    except subprocess.TimeoutExpired as exc:  # a remote that does not answer
        raise GitTimeoutError(
            f"git {' '.join(args[:2])} gave no answer in {timeout:.0f} s in {kb.root}"
        ) from exc
    if check and proc.returncode != 0:
        raise _failed(kb, args, proc)
    return proc


def _subcommand(args: tuple[str, ...]) -> str | None:
    """The git command ``args`` run (``add`` of ``--literal-pathspecs add -A``)."""
    taking_value = False
    for arg in args:
        if taking_value:
            taking_value = False
        elif arg in ("-c", "-C"):
            taking_value = True
        elif not arg.startswith("-"):
            return arg
    return None


def _failed(kb: Repository, args: tuple[str, ...], proc: subprocess.CompletedProcess) -> KbAiError:
    """The error for a git command that failed, carrying git's own message."""
    message = proc.stderr.strip() or proc.stdout.strip() or f"exit status {proc.returncode}"
    return KbAiError(f"git {' '.join(args[:2])} failed in {kb.root}: {message}")


def _identity_env() -> tuple[str | None, ...]:
    names = (
        "HOME",
        "XDG_CONFIG_HOME",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_NOSYSTEM",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_EMAIL",
        "EMAIL",
    )
    return tuple(os.environ.get(name) for name in names)


@functools.lru_cache(maxsize=32)
def _identity_args(root: str, *env: str | None) -> tuple[str, ...]:
    """kb-ai's identity if ``git config user.email`` finds none (asked once per environment)."""
    proc = subprocess.run(
        ["git", "config", "user.email"], cwd=root, capture_output=True, text=True, check=False
    )
    has_email = proc.returncode == 0 and proc.stdout.strip()
    has_env = os.environ.get("GIT_AUTHOR_EMAIL") and os.environ.get("GIT_COMMITTER_EMAIL")
    return () if has_email or has_env else KB_AI_IDENTITY


def head_sha(kb: Repository) -> str | None:
    """The short sha of HEAD, or None in a repository without commits."""
    proc = _run(kb, ("rev-parse", "--short", "--verify", "--quiet", "HEAD^{commit}"), check=False)
    if proc.returncode != 0:
        return None
    return proc.stdout.strip() or None


def head_commit(kb: Repository) -> str | None:
    """The full sha of HEAD, or None in a repository without commits (or no git)."""
    try:
        proc = _run(kb, ("rev-parse", "--verify", "--quiet", "HEAD^{commit}"), check=False)
    except KbAiError:
        return None
    return (proc.stdout.strip() or None) if proc.returncode == 0 else None


def changed_since(kb: Repository, commit: str, under: str) -> list[str] | None:
    """The KB-relative paths under ``under`` that differ between ``commit`` and HEAD
    (added, changed or deleted), or None when git cannot tell (``commit`` unknown: a
    history rewritten, a repository made again)."""
    args = ("diff", "--name-only", "-z", "--no-renames", commit, "HEAD", "--", under)
    proc = _run(kb, args, check=False)
    if proc.returncode != 0:
        return None
    return [p for p in proc.stdout.split("\0") if p]


def commit_all(kb: Repository, message: str) -> str | None:
    """Stage every change to the versioned parts and commit it.

    Returns the short sha of the new commit, or None when nothing had changed.
    """
    paths = [p for p in VERSIONED if (kb.root / p).exists()]
    # A part deleted from disk may still be tracked. (bases/, made on the first merge
    # of a hand edit, is never deleted by kb-ai once made: not there, never made.)
    if len(paths) < len(VERSIONED) - sum(p not in paths for p in _MADE_WHEN_NEEDED):
        tracked = set(git(kb, "ls-files", "-z", "--", *VERSIONED).split("\0"))
        tracked_tops = {path.split("/", 1)[0] for path in tracked if path}
        paths = [p for p in VERSIONED if p in paths or p in tracked_tops]
    if paths:
        git(kb, "add", "-A", "--", *paths)
    return _commit_staged(kb, message)


def stage_ahead(kb: Repository, paths: list[str]) -> None:
    """Stage ``paths`` (KB-relative, inside the versioned parts) now, so that the commit
    at the end of a run has less to hash. Best effort: :func:`commit_all` stages
    everything again and reports what fails."""
    present = [p for p in paths if p.split("/", 1)[0] in VERSIONED and (kb.root / p).exists()]
    if present:
        spec = "\0".join(present)
        args = ("--literal-pathspecs", "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul")
        _run(kb, args, False, spec)


def commit_paths(kb: Repository, message: str, paths: list[str]) -> str | None:
    """Commit exactly ``paths`` (leaving anything else staged alone); None if unchanged."""
    git(kb, "add", "-A", "--", *paths)
    if _run(kb, ("diff", "--cached", "--quiet", "--", *paths), check=False).returncode == 0:
        return None
    git(kb, "commit", "-q", "-m", signed(message), "--", *paths)
    return head_sha(kb)


#: Subjects of kb-ai's commits from before they carried the trailer.
_KB_AI_SUBJECTS = (
    "compile:",
    "review: approve",
    "Create the kb-ai knowledge base",
    "Add what the kb-ai knowledge base",
    "Settings of compile run",
    "rm:",
    "lint --fix:",
)


def is_kb_ai_commit(subject: str, trailer: str) -> bool:
    """Whether a commit is kb-ai's own work (its trailer, or an older kb-ai subject), not
    a person's edit."""
    return bool(trailer.strip()) or subject.startswith(_KB_AI_SUBJECTS)


def signed(message: str) -> str:
    """``message`` with kb-ai's trailer: the commit is kb-ai's work, not a person's edit."""
    return f"{message.rstrip()}\n\n{TRAILER}: yes"


def _commit_staged(kb: Repository, message: str) -> str | None:
    # Commit first, ask why only when it fails: one git process less on every run.
    args = ("commit", "-q", "-m", signed(message))
    proc = _run(kb, args, check=False)
    if proc.returncode != 0:
        if _run(kb, ("diff", "--cached", "--quiet"), check=False).returncode == 0:
            return None  # nothing was staged
        raise _failed(kb, args, proc)
    return head_sha(kb)


def file_history(kb: Repository, rel: str) -> list[dict[str, str | bool]]:
    """The commits that changed ``rel`` (following renames), newest first.

    Each is ``{"sha": short sha, "date": ISO 8601 author date, "author": who made the
    change, "subject": first line, "by_hand": True for a commit that is not kb-ai's}``.
    """
    kb.resolve(rel, under="")
    if head_sha(kb) is None:
        return []
    fields = f"%h%x1f%aI%x1f%an%x1f%(trailers:key={TRAILER},valueonly)%x1f%s%x1e"
    out = git(kb, "log", "--follow", f"--format={fields}", "--", rel)
    history = []
    for record in out.split("\x1e"):
        record = record.strip("\n")
        if record:
            sha, date, author, trailer, subject = record.split("\x1f", 4)
            history.append(
                {"sha": sha, "date": date, "author": author, "subject": subject,
                 "by_hand": not is_kb_ai_commit(subject, trailer)}
            )  # fmt: skip
    return history


def show_diff(kb: Repository, sha: str, rel: str) -> str:
    """The change commit ``sha`` made to ``rel``, as a unified diff ("" if it did not touch it)."""
    kb.resolve(rel, under="")
    if not _REV.fullmatch(sha):
        raise UsageError(f"{sha!r} is not a commit", hint="use a sha from the file's history")
    if _run(kb, ("cat-file", "-e", f"{sha}^{{commit}}"), check=False).returncode != 0:
        raise NotFoundError(
            f"no commit {sha} in {kb.root}", hint="use a sha from the file's history"
        )
    return git(kb, "show", "--format=", "--no-color", "--no-ext-diff", sha, "--", rel)
