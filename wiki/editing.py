"""Editing an article by hand (the browser's editor): the new text is checked, then
saved as one commit whose author is the person (the knowledge base's actor, see
wiki/actors.py), with kb-ai as the committer.

A save names the version the person loaded (its git blob id): when the file changed
since (another person saved, or a compile wrote it), the save is refused as a conflict
and nothing is written. A text whose frontmatter does not parse, or that drops the
title or changes the sources, is refused with the line to fix. The indexes follow in the
same commit when the article's line in them changed (its title, summary, tags or keys),
and the search and catalog tables after it, so the Wiki page lists what was saved and
Health finds nothing to repair.
"""

from __future__ import annotations

import time
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from kb_ai.errors import EditConflictError, KbAiError, UsageError
from wiki._frontmatter import DELIMITER, _StringLoader
from wiki.articles import Article, article_from, one_line, read_article
from wiki.catalog import entry_for, index_fingerprint, load_catalog, write_indexes
from wiki.files import atomic_write_text
from wiki.git import _run, git
from wiki.hand_edits import EDIT_LOCK, blob_id
from wiki.held import Held
from wiki.indexing import refresh_search_index
from wiki.lock import KbLock, compile_lock
from wiki.repair import INDEX_FINGERPRINT
from wiki.state import get_meta, open_state, set_meta

if TYPE_CHECKING:
    from wiki.layout import KnowledgeBase

_ATTEMPTS = 20  # tries of a commit while git's index is locked by a compile, 0.1 s apart


def normalise_text(text: str) -> str:
    """A textarea's text as a file: LF line ends, ending on one."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.rstrip("\n") + "\n"


def check_edit(rel: str, text: str, before: Article) -> Article:
    """The article ``text`` holds, or a :class:`UsageError` naming the line to fix."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != DELIMITER:
        raise _refused(1, "an article starts with a '---' line, then its frontmatter")
    end = next((i for i, line in enumerate(lines[1:], 1) if line.rstrip() == DELIMITER), None)
    if end is None:
        raise _refused(1, "the frontmatter has no closing '---' line")
    header = "\n".join(lines[1:end])
    try:
        meta = yaml.load(header, Loader=_StringLoader)  # noqa: S506 - a safe loader
    except yaml.MarkedYAMLError as exc:
        mark = exc.context_mark or exc.problem_mark  # where the broken value starts
        line = mark.line + 2 if mark is not None else 2
        raise _refused(line, f"the frontmatter is not valid YAML: {exc.problem or exc}") from exc
    except yaml.YAMLError as exc:
        raise _refused(2, f"the frontmatter is not valid YAML: {exc}") from exc
    if not isinstance(meta, dict):
        raise _refused(2, "the frontmatter must be keys with values (title: ..., sources: ...)")
    body = "\n".join(lines[end + 1 :]).removeprefix("\n")
    article = article_from(rel, meta, body)
    if not one_line(meta.get("title")):
        raise _refused(_line_of(lines, end, "title"), "the title is missing: keep a title")
    if article.type != before.type:
        raise _refused(
            _line_of(lines, end, "type"),
            f"the type must stay {before.type!r} (it is the folder the article is in)",
        )
    if article.sources != before.sources:
        raise _refused(
            _line_of(lines, end, "sources"),
            "the sources must stay as they were (" + ", ".join(before.sources or ["none"])
            + "): they are kb-ai's record of where the article's words come from",
        )  # fmt: skip
    return article


def _line_of(lines: list[str], end: int, key: str) -> int:
    """The file line (1-based) of ``key:`` in the frontmatter, or the first line after it."""
    for i, line in enumerate(lines[1:end], 2):
        if line.startswith(f"{key}:"):
            return i
    return end + 1


def _refused(line: int, why: str) -> UsageError:
    return UsageError(f"line {line}: {why}", hint="fix that line and save again")


def save_edit(kb: KnowledgeBase, rel: str, text: str, *, base: str, message: str) -> str | None:
    """Save ``text`` as article ``rel`` in one commit by ``kb.actor``; returns its short
    sha, or None when the text is the file's. ``base``: the blob id of the version the
    person loaded; a file that changed since is an :class:`EditConflictError`."""
    text = normalise_text(text)
    file = kb.resolve(rel, under="wiki")
    before = read_article(kb, rel)
    after = check_edit(before.path, text, before)
    message = " ".join(message.split()) or f"Edit {before.title}"
    with KbLock(kb.state_dir / EDIT_LOCK):
        current = file.read_text(encoding="utf-8")
        if blob_id(current) != base:
            raise EditConflictError(
                f"{before.path} changed since you opened it: your text was not saved",
                hint="compare it with the version shown, merge your change in, and save again",
            )
        if current == text:
            return None
        indexes = _IndexLines(kb, before, after)
        atomic_write_text(file, text)
        try:
            _commit(kb, [before.path, *indexes.write()], message)
        except BaseException:
            atomic_write_text(file, current)  # nothing half-saved: the file as it was
            indexes.put_back()
            _run(kb, ("reset", "-q", "--", before.path, *indexes.paths), check=False)
            raise
        finally:
            indexes.release()
    with closing(open_state(kb)) as conn:  # what Chat and Health read: the saved text
        refresh_search_index(kb, conn, [before.path])
    return git(kb, "rev-parse", "--short", "HEAD").strip()


class _IndexLines:
    """The indexes (master-index.md, topics.md) with an edited article's line as it is
    now, when its title, summary, tags or keys changed. Written under the compile lock
    only: a compile running meanwhile reads the article again at its index stage (it
    changed after the compile started), so then they are left to it."""

    def __init__(self, kb: KnowledgeBase, before: Article, after: Article) -> None:
        self.kb, self.entry = kb, entry_for(after)
        self.paths: list[str] = []
        self._old: dict[str, str] = {}
        self._lock: Held | None = None
        if self.entry == entry_for(before) or not kb.master_index_path.is_file():
            return
        lock = compile_lock(kb)
        if lock.acquire(blocking=False):
            self._lock = lock

    def write(self) -> list[str]:
        """Write the indexes; the paths written (none when they are left alone)."""
        if self._lock is None:
            return []
        kb = self.kb
        files = (kb.master_index_path, kb.topics_path)
        self._old = {str(f): f.read_text(encoding="utf-8") for f in files if f.is_file()}
        entries = [e for e in load_catalog(kb, keep_lines=True) if e.path != self.entry.path]
        with closing(open_state(kb)) as conn:
            trusted = get_meta(conn, INDEX_FINGERPRINT) == index_fingerprint(kb)
            fingerprint = write_indexes(kb, [*entries, self.entry])
            if trusted:  # the next compile trusts them as it did (and reads the article)
                set_meta(conn, INDEX_FINGERPRINT, fingerprint)
        self.paths = [kb.relpath(f) for f in files]
        return self.paths

    def put_back(self) -> None:
        """The indexes as they were (a commit that failed)."""
        for name, text in self._old.items():
            atomic_write_text(Path(name), text)

    def release(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None


def _commit(kb: KnowledgeBase, paths: list[str], message: str) -> None:
    """Commit ``paths`` alone (no kb-ai trailer: a person's edit). A compile staging its
    files holds git's index lock for a moment: waited for, a few times."""
    index_lock = kb.root / ".git" / "index.lock"
    for attempt in range(_ATTEMPTS):
        try:
            git(kb, "add", "--", *paths)
            git(kb, "commit", "-q", "-m", message, "--", *paths)
            return
        except KbAiError:
            if attempt == _ATTEMPTS - 1 or not index_lock.exists():
                raise
            time.sleep(0.1)
