"""The knowledge base: where each part of it lives on disk."""

from __future__ import annotations

import os
import posixpath
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath, PureWindowsPath

from kb_ai.errors import NotAKnowledgeBaseError, PathEscapeError, UsageError
from wiki.actors import Actor
from wiki.files import atomic_write_text
from wiki.git import commit_all, commit_paths, git, head_sha

CONFIG_NAME = "kb-ai.toml"
STATE_DIR_NAME = ".kb-ai"

CONFIG_HEADER = """\
# kb-ai settings for this knowledge base.
#
# Precedence, highest first: command-line option, environment (KB_AI_<NAME>), this file,
# the default. `kb-ai settings` lists them with their values here. For example:
#
# model = "openai/gpt-4o-mini"
# api_base = "http://localhost:11434/v1"
"""
#: The head of log.md (wiki/log.py appends a section per compile run below it).
LOG_HEADER = "# kb-ai log\n\nWhat each compile run did, oldest first.\n"


@dataclass(frozen=True)
class KnowledgeBase:
    """A knowledge base directory; see the on-disk layout in DESIGN.md.

    ``actor``: who acts on it (see wiki/actors.py): the author of every commit made
    through this object, named in log.md. None: git's own identity, as before.
    """

    root: Path
    actor: Actor | None = field(default=None, compare=False)

    def acting_as(self, actor: Actor | None) -> KnowledgeBase:
        """The same knowledge base, with ``actor`` the author of what is written through it."""
        return replace(self, actor=actor)

    @property
    def raw_dir(self) -> Path:
        return self.root / "raw"

    @property
    def extraction_dir(self) -> Path:
        return self.root / "extraction"

    @property
    def wiki_dir(self) -> Path:
        return self.root / "wiki"

    @property
    def index_dir(self) -> Path:
        return self.root / "index"

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR_NAME

    @property
    def state_db(self) -> Path:
        return self.state_dir / "state.db"

    @property
    def log_path(self) -> Path:
        return self.root / "log.md"

    @property
    def config_path(self) -> Path:
        return self.root / CONFIG_NAME

    @property
    def master_index_path(self) -> Path:
        return self.index_dir / "master-index.md"

    @property
    def topics_path(self) -> Path:
        return self.index_dir / "topics.md"

    @classmethod
    def open(cls, root: str | Path) -> KnowledgeBase:
        """The knowledge base at ``root``; raises if there is none."""
        root = Path(root).expanduser().resolve()
        if not (root / CONFIG_NAME).is_file():
            raise NotAKnowledgeBaseError(
                f"{root} is not a kb-ai knowledge base (no {CONFIG_NAME})",
                hint="run `kb-ai init` there, or point at one with `kb-ai --kb DIR`",
            )
        return cls(root)

    @classmethod
    def init(cls, root: str | Path) -> KnowledgeBase:
        """Create a knowledge base at ``root`` (a git repository with a first commit).

        Idempotent: on an existing knowledge base it only adds what is missing. Refuses a
        directory that holds anything but a ``.git``, unless it is a knowledge base already.
        """
        root = Path(root).expanduser().resolve()
        if root.exists() and not root.is_dir():
            raise UsageError(f"{root} is a file", hint="give a directory for the knowledge base")
        kb = cls(root)
        if not kb.config_path.is_file() and root.exists():
            others = sorted(p.name for p in root.iterdir() if p.name != ".git")
            if others:
                listed = ", ".join(others[:5]) + (", ..." if len(others) > 5 else "")
                raise UsageError(
                    f"{root} is not empty and not a kb-ai knowledge base (it holds {listed})",
                    hint="choose an empty or new directory for the knowledge base",
                )
        for directory in (kb.raw_dir, kb.extraction_dir, kb.wiki_dir, kb.index_dir, kb.state_dir):
            directory.mkdir(parents=True, exist_ok=True)
        changed = []
        if not kb.config_path.exists():
            atomic_write_text(kb.config_path, CONFIG_HEADER)
            changed.append(CONFIG_NAME)
        if _ensure_ignored(root / ".gitignore", f"{STATE_DIR_NAME}/"):
            changed.append(".gitignore")
        if not kb.log_path.exists():
            atomic_write_text(kb.log_path, LOG_HEADER)
            changed.append("log.md")
        if not (root / ".git").exists():
            git(kb, "init", "-q", "-b", "main")
        if head_sha(kb) is None:  # a new repository: its first commit holds the whole KB
            commit_all(kb, "Create the kb-ai knowledge base")
        elif changed:  # only what init added; the user's own edits stay theirs to commit
            commit_paths(kb, "Add what the kb-ai knowledge base was missing", changed)
        return kb

    def resolve(self, rel: str, *, under: str = "wiki") -> Path:
        """The path of KB-relative ``rel``, which must stay inside ``root/under``.

        Raises PathEscapeError for absolute paths, ``..`` leaving ``under``, and paths
        that resolve (through symlinks) outside it. ``under=""`` allows the whole KB.
        """
        norm = _normalise(str(rel))
        base = _normalise(under) if under not in ("", ".") else "."
        inside = norm == base or base == "." or norm.startswith(base + "/")
        if norm == ".." or norm.startswith("../") or not inside:
            where = f"{under}/" if base != "." else "the knowledge base"
            raise PathEscapeError(f"{rel!r} is outside {where}", hint=f"use a path under {where}")
        path = self.root / norm
        if norm != "." and not _has_symlink(str(self.root), norm):
            return path  # (then it is where it says, below the root: inside ``under``)
        real_base = (self.root / base).resolve()
        real = path.resolve()
        if real != real_base and not real.is_relative_to(real_base):
            raise PathEscapeError(
                f"{rel!r} leads outside {under or 'the knowledge base'} (through a symlink)",
                hint="replace the symlink with a regular file",
            )
        return path

    def relpath(self, path: str | Path) -> str:
        """``path`` relative to the root, with forward slashes ("wiki/topic/x.md")."""
        path = Path(path)
        if not path.is_absolute():
            return self.resolve(path.as_posix(), under="").relative_to(self.root).as_posix()
        for candidate, base in ((path, self.root), (path.resolve(), self.root.resolve())):
            if candidate.is_relative_to(base):
                return _normalise(candidate.relative_to(base).as_posix())
        raise PathEscapeError(f"{path} is outside the knowledge base {self.root}")


def _has_symlink(root: str, norm: str) -> bool:
    """Whether a part of ``root/norm`` below ``root`` is a symlink (or cannot be looked
    at): only then does resolving it say more. One lstat a part, where Path.resolve
    walks every part from / in Python (64 us a path against 22; a compile of 38 sources
    resolves 150, in the threads that write while the model works)."""
    current = root
    for part in norm.split("/"):
        current = f"{current}/{part}"
        try:
            mode = os.lstat(current).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return False  # nothing there, nor below it: no symlink to follow
        except OSError:
            return True
        if stat.S_ISLNK(mode):
            return True
    return False


def _normalise(rel: str) -> str:
    """A lexically normalised relative posix path; refuses absolute ones."""
    if not rel or "\0" in rel:
        raise PathEscapeError(f"{rel!r} is not a path", hint="give a path such as wiki/topic/x.md")
    if (
        PurePosixPath(rel).is_absolute()
        or PureWindowsPath(rel).is_absolute()
        or PureWindowsPath(rel).drive
        or rel.startswith(("/", "\\"))
    ):
        raise PathEscapeError(
            f"{rel!r} is an absolute path", hint="give a path relative to the knowledge base"
        )
    return posixpath.normpath(rel.replace("\\", "/"))


def _ensure_ignored(gitignore: Path, pattern: str) -> bool:
    """Add ``pattern`` to ``gitignore`` unless it is there; True if the file changed."""
    text = gitignore.read_text(encoding="utf-8") if gitignore.exists() else ""
    if pattern in (line.strip() for line in text.splitlines()):
        return False
    if text and not text.endswith("\n"):
        text += "\n"
    atomic_write_text(gitignore, text + pattern + "\n")
    return True
