"""Who acts on a knowledge base: a person, the CLI user, an agent or the worker.

An actor is carried by the knowledge base it acts on (``kb.acting_as(actor)``): every
commit git makes for it has the actor as its author and kb-ai as its committer, and
log.md names it under each run. The application layer (kb_ai/service) decides who acts;
the code below it only passes the knowledge base on.
"""

from __future__ import annotations

import getpass
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from kb_ai.errors import UsageError

ActorKind = Literal["person", "cli", "agent", "worker", "web"]
KINDS: tuple[str, ...] = ("person", "cli", "agent", "worker", "web")

#: kb-ai's own identity: the committer of every commit made for an actor.
KB_AI_NAME = "kb-ai"
KB_AI_EMAIL = "kb-ai@localhost"


@dataclass(frozen=True)
class Actor:
    """Who caused a write: ``kind`` (person, cli, agent, worker, web), a display name, and
    an email when one is known (git's author email is left empty without it)."""

    kind: ActorKind
    name: str
    email: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise UsageError(f"{self.kind!r} is not a kind of actor", hint=f"one of {KINDS}")
        if not self.name.strip() or any(c in self.name for c in "<>\n"):
            raise UsageError(
                f"{self.name!r} is not an actor's name", hint="a name like Ada Lovelace"
            )
        if self.email is not None and any(c in self.email for c in "<> \n"):
            raise UsageError(f"{self.email!r} is not an email address")

    @property
    def label(self) -> str:
        """The actor as log lines name it: ``Ada Lovelace <ada@example.org> (person)``."""
        who = f"{self.name} <{self.email}>" if self.email else self.name
        return f"{who} ({self.kind})"

    def git_env(self) -> dict[str, str]:
        """The environment that makes git write this actor as author, kb-ai as committer."""
        return {
            "GIT_AUTHOR_NAME": self.name,
            "GIT_AUTHOR_EMAIL": self.email or "",
            "GIT_COMMITTER_NAME": KB_AI_NAME,
            "GIT_COMMITTER_EMAIL": KB_AI_EMAIL,
        }

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "email": self.email}

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Actor:
        return cls(data["kind"], data["name"], data.get("email") or None)

    @classmethod
    def cli_user(cls, root: str | Path | None = None) -> Actor:
        """The person at the terminal: git's user.name and user.email where they are
        configured (for the repository at ``root``, else globally), else the login name."""
        config = _git_user(root)
        email = config.get("user.email")
        usable = email if email and " " not in email else None  # git writes no such author
        return cls("cli", config.get("user.name") or _login_name(), usable)

    @classmethod
    def worker(cls) -> Actor:
        """The compile worker, for what no person or agent asked for (a watched folder)."""
        return cls("worker", "kb-ai worker")

    @classmethod
    def agent(cls, name: str) -> Actor:
        """A coding agent (claude-code, codex, ...) whose session is compiled."""
        return cls("agent", name)


def _git_user(root: str | Path | None) -> dict[str, str]:
    """git's effective user.name and user.email (one git process: the last of each wins,
    as git reads its files from system to repository)."""
    cwd = Path(root) if root is not None and Path(root).is_dir() else None
    try:
        proc = subprocess.run(
            ["git", "config", "--get-regexp", r"^user\.(name|email)$"],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
        )
    except FileNotFoundError:  # no git: wiki/git.py says so at the first commit
        return {}
    found = {}
    for line in proc.stdout.splitlines():
        key, _, value = line.partition(" ")
        value = " ".join(value.replace("<", " ").replace(">", " ").split())
        if value:
            found[key.lower()] = value
    return found


def _login_name() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no user database entry (some containers)
        return os.environ.get("USER") or "kb-ai user"
