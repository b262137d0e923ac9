"""Git: the history of the knowledge base, through the git command line."""

from __future__ import annotations

import functools
import os
import re
import subprocess
from dataclasses import dataclass
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
#: Their blobs are compressed fast (zlib level 1, not git's 6) unless the user chose a
#: level: in a wiki of 10,000 articles every compile rewrites a 2.3 MB master index and a
#: 1.7 MB topic index, and their `git add` took 220-240 ms, 100-110 ms at level 1, for 22%
#: more pack (1,156 against 947 KiB). gc's repack stores old versions as deltas and keeps
#: the rest as they are (`git repack -F` compresses them again at the configured level).
_FAST_COMPRESSION = ("-c", "pack.compression=1")


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
    config = _config(str(kb.root), *_identity_env())
    sub = _subcommand(args)
    # (.git looked at each time: the configuration may be asked before `git init`)
    own_gc = sub == "commit" and config.own_gc and (kb.root / ".git").is_dir()
    extra_args = config.add_args if sub == "add" else _NO_AUTO_MAINTENANCE if own_gc else ()
    command = ["git", *config.identity, *extra_args, *args]
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
    if own_gc and proc.returncode == 0 and _gc_due(kb.root / ".git", config):
        _run(kb, ("gc", "--auto", "--quiet"), check=False)  # (git's check again, then gc)
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


@dataclass(frozen=True)
class _Config:
    """What kb-ai's git commands take from git's configuration: asked once per
    environment and knowledge base (a setting changed while a server runs counts from
    its next start)."""

    identity: tuple[str, ...]  # kb-ai's own, when git finds no user.email
    own_gc: bool  # kb-ai asks whether gc is due after a commit, not git's child process
    add_args: tuple[str, ...] = _ADD_INTO_PACK + _FAST_COMPRESSION  # before every `add`
    gc_auto: int = 6700  # gc.auto (git's default): loose objects before gc packs them
    pack_limit: int = 50  # gc.autoPackLimit (git's default): packs before gc merges them


#: A commit kb-ai makes runs no `git maintenance run --auto` process of its own after it
#: (~6 ms a commit beside two busy processes, to find nothing to do nearly every time):
#: kb-ai counts what git's gc task counts (git's need_to_gc: the loose objects in
#: objects/17, the packs) and runs `git gc --auto` only once one of them is over its
#: limit. Only where git's maintenance is the default (its gc task alone): any other
#: maintenance.* setting leaves the commit's own run of it to git.
_NO_AUTO_MAINTENANCE = ("-c", "maintenance.auto=false")

_HEX = re.compile(r"[0-9a-f]+")
_CONFIG_KEYS = (
    r"^(user\.email|gc\.auto|gc\.autopacklimit|maintenance\..*|(pack|core)\.compression)$"
)


@functools.lru_cache(maxsize=32)
def _config(root: str, *env: str | None) -> _Config:
    """kb-ai's identity if git finds no user.email, whether kb-ai may check for gc
    after its commits, and how its adds compress (one ``git config`` process per
    environment)."""
    proc = subprocess.run(
        ["git", "config", "--get-regexp", _CONFIG_KEYS],
        cwd=root, capture_output=True, text=True, check=False,
    )  # fmt: skip
    values: dict[str, str] = {}
    for line in proc.stdout.splitlines() if proc.returncode == 0 else ():
        key, _, value = line.partition(" ")
        values[key] = value  # (the last one wins, as in git)
    has_env = os.environ.get("GIT_AUTHOR_EMAIL") and os.environ.get("GIT_COMMITTER_EMAIL")
    identity = () if values.get("user.email", "").strip() or has_env else KB_AI_IDENTITY
    chosen = "pack.compression" in values or "core.compression" in values  # (theirs, kept)
    adds = _ADD_INTO_PACK if chosen else _Config.add_args
    maintenance = {k for k in values if k.startswith("maintenance.")}
    gc_auto = _config_int(values.get("gc.auto", str(_Config.gc_auto)))
    pack_limit = _config_int(values.get("gc.autopacklimit", str(_Config.pack_limit)))
    if maintenance - {"maintenance.auto"} or gc_auto is None or pack_limit is None:
        return _Config(identity, own_gc=False, add_args=adds)  # git's own maintenance
    if "maintenance.auto" in maintenance and not _config_true(values["maintenance.auto"]):
        return _Config(identity, own_gc=False, add_args=adds)  # none: the user said so
    return _Config(identity, True, adds, gc_auto, pack_limit)


def _config_int(value: str) -> int | None:
    """A git config integer (``6700``, ``10k``); None when git would refuse it."""
    match = re.fullmatch(r"\s*(-?\d+)\s*([kmg]?)\s*", value, re.IGNORECASE)
    if match is None:
        return None
    scale = 1024 ** ("kmg".index(match[2].lower()) + 1) if match[2] else 1
    return int(match[1]) * scale


def _config_true(value: str) -> bool:
    """A git config boolean (a key without a value is true)."""
    return value.strip().lower() not in ("false", "no", "off", "0")


def _gc_due(git_dir: Path, config: _Config) -> bool:
    """Whether `git gc --auto` has work: more packs than gc.autoPackLimit, or more loose
    objects than gc.auto (git estimates them from objects/17, 1/256 of them)."""
    if config.gc_auto <= 0:
        return False
    objects = git_dir / "objects"
    try:
        if config.pack_limit > 0:
            names = set(os.listdir(objects / "pack"))
            packs = [n for n in names if n.endswith(".pack") and f"{n[:-5]}.keep" not in names]
            if len(packs) > config.pack_limit:
                return True
        loose = os.listdir(objects / "17")
    except OSError:  # (none there yet: no loose object of that prefix; else: next commit)
        return False
    threshold = (config.gc_auto + 255) // 256
    return sum(len(n) == 38 and _HEX.fullmatch(n) is not None for n in loose) > threshold


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
