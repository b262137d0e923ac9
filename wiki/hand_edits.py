"""Hand edits: what a person changed in an article, and its three-way merge with the
next version kb-ai writes, as git merges (``git merge-file``).

kb-ai's own last version of an article is the one its next merge starts from:

- the copy under ``bases/<article path>``, once a hand edit was merged into the article
  (what kb-ai wrote, without the person's lines: the file itself holds both);
- else the article as the newest commit kb-ai made itself left it. kb-ai's commits carry
  the ``Kb-Ai-Commit`` trailer (wiki/git.py); commits from before the trailer are known
  by the subjects kb-ai writes. Any other commit is a person's: a `git commit` by hand,
  or the browser's editor (wiki/editing.py).

Whatever differs between that version and the file is a person's change.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from wiki.files import atomic_write_text
from wiki.git import TRAILER, Repository, _run, git, is_kb_ai_commit
from wiki.schema import apply_migrations

BASES = "bases"
#: Held by a compile storing an article and by the browser's editor saving one.
EDIT_LOCK = "edit.lock"
VERSION_MIGRATIONS = ("CREATE TABLE kb_ai_versions (path TEXT PRIMARY KEY, blob TEXT NOT NULL)",)
_HISTORY_DEPTH = 200  # commits of one article looked through for kb-ai's last one


@dataclass(frozen=True)
class Edit:
    """One commit that changed an article and is not kb-ai's."""

    commit: str  # short sha
    author: str
    email: str
    date: str
    subject: str

    def label(self) -> str:
        return f"{self.commit} by {self.author}"


@dataclass(frozen=True)
class HandEdit:
    """An article that holds a person's change: ``base`` is kb-ai's own last version
    ("" when kb-ai never wrote the file), ``current`` the file as it is, ``edits`` the
    person's commits since kb-ai's (newest first; empty when the change is not
    committed)."""

    path: str
    base: str
    current: str
    edits: tuple[Edit, ...]

    def by(self) -> str:
        """Who made the change, for messages: "a1b2c3d by Ann, 9f8e7d6 by Bo"."""
        return ", ".join(e.label() for e in self.edits) or "an uncommitted change"


@dataclass(frozen=True)
class Merge:
    """A three-way merge: ``text`` with conflict markers where the two sides overlap;
    ``proposal`` the same merge with kb-ai's side taken where they do."""

    text: str
    conflicts: int
    proposal: str


def base_path(rel: str) -> str:
    """Where kb-ai's own last version of article ``rel`` is kept once it was merged."""
    return f"{BASES}/{rel}"


def find_hand_edit(kb: Repository, rel: str, known: str | None = None) -> HandEdit | None:
    """The person's change to article ``rel`` since kb-ai's own last version, or None
    when the file is what kb-ai last wrote (or not there). ``known``: the blob id of
    the text kb-ai last wrote there with no hand edit in it (see :func:`load_versions`);
    a file still holding it needs no look at its history."""
    file = kb.resolve(rel, under="wiki")
    if not file.is_file():
        return None
    current = file.read_text(encoding="utf-8")
    kept = kb.resolve(base_path(rel), under=BASES)
    base = kept.read_text(encoding="utf-8") if kept.is_file() else None
    if base is None and known is not None and known == blob_id(current):
        return None
    if base is not None and base == current:
        return None
    edits, last = _edits_since_kb_ai(kb, rel, through=base is not None)
    if base is None:
        # (never committed by kb-ai: a person's file throughout)
        base = "" if last is None else git(kb, "show", f"{last}:{rel}")
        if base == current:
            return None
    return HandEdit(rel, base, current, tuple(edits))


def _edits_since_kb_ai(
    kb: Repository, rel: str, *, through: bool = False
) -> tuple[list[Edit], str | None]:
    """The person's commits to ``rel`` newer than kb-ai's last one, and that one's sha.
    ``through``: an article merged before, whose kb-ai version is kept under bases/:
    every person's commit of its recent history (their lines may be in it still)."""
    fields = f"%h%x1f%an%x1f%ae%x1f%aI%x1f%s%x1f%(trailers:key={TRAILER},valueonly)%x1e"
    edits: list[Edit] = []
    for record in _log_records(kb, ("log", f"-n{_HISTORY_DEPTH}", f"--format={fields}", "--", rel)):
        sha, author, email, date, subject, trailer = record.split("\x1f", 5)
        if is_kb_ai_commit(subject, trailer):
            if through:
                continue
            return edits, sha
        edits.append(Edit(sha, author, email, date, subject))
    return edits, None


def _log_records(kb: Repository, args: tuple[str, ...]) -> Iterator[str]:
    """The records (ended by 0x1e) `git <args>` prints, as it prints them: a walk whose
    answer is its first commit (the usual case) stops there, not at the end of history."""
    with subprocess.Popen(
        ["git", *args], cwd=kb.root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True, encoding="utf-8", errors="replace",
        env={**os.environ, "GIT_FLUSH": "1"},  # each commit as found, not a buffer at a time
    ) as proc:  # fmt: skip
        assert proc.stdout is not None
        pending = ""
        try:
            for line in proc.stdout:  # a record ends a line ("\x1e\n"); it may span lines
                pending += line
                if pending.endswith("\x1e\n"):
                    yield pending[:-2].strip("\n")
                    pending = ""
        finally:
            proc.kill()


def blob_id(text: str) -> str:
    """git's id of a file holding ``text`` (what `git hash-object` prints)."""
    data = text.encode("utf-8")
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def load_versions(conn: sqlite3.Connection) -> dict[str, str]:
    """Article path -> the blob id of the text kb-ai last wrote there, for articles whose
    file was kb-ai's own text (no hand edit merged in). Not versioned: a cache that
    spares a walk through each article's history (a miss only costs that walk)."""
    apply_migrations(conn, "kb_ai_versions", VERSION_MIGRATIONS)
    return dict(conn.execute("SELECT path, blob FROM kb_ai_versions").fetchall())


def save_versions(conn: sqlite3.Connection, written: dict[str, str | None]) -> None:
    """Record what kb-ai wrote (path -> blob id; None: a merge, nothing to remember)."""
    apply_migrations(conn, "kb_ai_versions", VERSION_MIGRATIONS)
    with conn:
        conn.executemany(
            "INSERT OR REPLACE INTO kb_ai_versions VALUES (?, ?)",
            [(p, b) for p, b in written.items() if b is not None],
        )
        conn.executemany(
            "DELETE FROM kb_ai_versions WHERE path = ?",
            [(p,) for p, b in written.items() if b is None],
        )


def merge_texts(kb: Repository, base: str, ours: str, theirs: str) -> Merge:
    """The three-way merge of the person's file (``ours``) and kb-ai's new version
    (``theirs``) against kb-ai's last version (``base``), by ``git merge-file``.

    git counts two changes that touch adjacent lines as one place: a sentence added
    right after a line the other side rewrote is a conflict to it. Such a place is
    merged here (:func:`_beside`): one side only added lines before or after the base's
    lines, which the other rewrote, so both are kept, the rewrite where the base was.
    Where both sides change the same lines it stays a conflict."""
    with tempfile.TemporaryDirectory(prefix="kb-ai-merge-") as tmp:
        files = []
        for name, text in (("hand", ours), ("base", base), ("kb-ai", theirs)):
            path = Path(tmp) / name
            path.write_text(text, encoding="utf-8")
            files.append(str(path))
        marked, _ = _merge_file(
            kb, ("merge-file", "-p", "--diff3", f"--marker-size={_MARKER}", *files)
        )
    text: list[str] = []
    proposal: list[str] = []
    conflicts = 0
    for part in _parts(marked):
        if isinstance(part, str):
            text.append(part)
            proposal.append(part)
            continue
        mine, was, new = part
        merged = _beside(mine, was, new)
        if merged is not None:
            text += merged
            proposal += merged
            continue
        conflicts += 1
        text += [
            "<<<<<<< hand edit\n", *mine, "||||||| kb-ai's last version\n", *was,
            "=======\n", *new, ">>>>>>> kb-ai's new version\n",
        ]  # fmt: skip
        proposal += new
    return Merge("".join(text), conflicts, "".join(proposal))


def _merge_file(kb: Repository, args: tuple[str, ...]) -> tuple[str, int]:
    proc = _run(kb, args, check=False)
    if proc.returncode < 0 or proc.returncode > 127:
        git(kb, *args)  # raises with git's message
    return proc.stdout, proc.returncode


#: Conflict markers longer than a line of an article would be, so a line is never one.
_MARKER = 61
_OPEN, _BASE, _SPLIT, _CLOSE = ("<" * _MARKER, "|" * _MARKER, "=" * _MARKER, ">" * _MARKER)


def _parts(marked: str) -> list[str | tuple[list[str], list[str], list[str]]]:
    """``git merge-file --diff3`` output as lines merged, and (hand edit, kb-ai's last
    version, kb-ai's new version) lines for each place the two sides conflict."""
    out: list[str | tuple[list[str], list[str], list[str]]] = []
    sides: list[list[str]] | None = None
    for line in marked.splitlines(keepends=True):
        mark = line[:_MARKER] if line[_MARKER : _MARKER + 1] in (" ", "\n", "") else ""
        if sides is None:
            if mark == _OPEN:
                sides = [[]]
            else:
                out.append(line)
        elif mark in (_BASE, _SPLIT) and len(sides) < 3:
            sides.append([])
        elif mark == _CLOSE and len(sides) == 3:
            out.append((sides[0], sides[1], sides[2]))
            sides = None
        else:
            sides[-1].append(line)
    return out


def _beside(mine: list[str], was: list[str], new: list[str]) -> list[str] | None:
    """The lines of a conflict where one side only added lines before or after the base
    lines the other side rewrote: the rewrite, with the added lines where they were;
    None when the two change the same lines, or the lines added are next to lines the
    other side deleted (what they were about may be gone: a person decides)."""
    if not was:
        return None  # both added lines at one place: which first is for a person to say
    n = len(was)
    for added, rewrote in ((mine, new), (new, mine)):
        if len(added) <= n or not rewrote or rewrote == was:
            continue
        if added[:n] == was:  # lines added after the base's
            return rewrote + added[n:]
        if added[-n:] == was:  # lines added before them
            return added[:-n] + rewrote
    return None


def keep_base(kb: Repository, rel: str, text: str) -> None:
    """Keep ``text`` as kb-ai's own last version of ``rel`` (the file holds a merge)."""
    atomic_write_text(kb.resolve(base_path(rel), under=BASES), text)


def drop_base(kb: Repository, rel: str) -> None:
    """kb-ai's own last version of ``rel`` is the file itself again: no copy kept.
    (bases/ itself stays, so that a commit stages what left it: see commit_all.)"""
    file = kb.resolve(base_path(rel), under=BASES)
    file.unlink(missing_ok=True)
    root = kb.resolve(BASES, under="")
    parent = file.parent
    while parent != root and parent.is_dir() and not any(parent.iterdir()):
        parent.rmdir()
        parent = parent.parent


def commit_pending_edits(kb: Repository) -> str | None:
    """Commit articles changed on disk but not committed, as a person's edit (the
    environment's git identity), so a compile's own commit never takes them in as
    kb-ai's. Returns the commit's sha, or None when there were none."""
    out = git(kb, "status", "--porcelain", "-z", "--untracked-files=no", "--", "wiki")
    paths = [
        entry[3:]
        for entry in out.split("\0")
        if len(entry) > 3 and "M" in entry[:2] and entry.endswith(".md")
    ]
    if not paths:
        return None
    git(kb, "add", "--", *paths)
    git(kb, "commit", "-q", "-m", "Hand edits found in wiki/ before a compile", "--", *paths)
    return git(kb, "rev-parse", "--short", "HEAD").strip()
