"""Recovery: what a compile run killed outright (kill -9, a power cut) left behind.

A run notes each article in state.db before and after writing it (the journal), and
that it has recorded its sources; the journal is cleared once the run has committed.
The next run, holding the compile lock, finds a journal only when its run died, and
settles it before doing anything else, so the work tree and state.db agree again:

- sources not recorded yet: the articles the run wrote are rolled back (each to its
  text before the run, or removed if it was new), and its sources compile again (their
  extractions are reused). An article changed since the run wrote it is left as it is.
- sources recorded: the articles are kept; the indexes are rebuilt and all is committed.

Never both: a source's articles are either its recorded ones or those before the run.

A run that finds, just before its commit, that it lost the compile lock (a database
restart ended its session, and another server may be writing) has recorded its sources
already: :func:`before_recording` kept what recording changes as it was (the sources'
rows, the indexes, log.md, lessons), and :func:`put_back` restores it, so that the
articles are then rolled back as for a run that never recorded anything. Of lessons/,
only the files the run wrote (:func:`after_learning`) are put back, and only those still
as it wrote them: a person's edit there meanwhile (not committed yet) stays.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from dataclasses import replace

from compiler.record import INDEX_FINGERPRINT
from compiler.state import Recorded
from kb_ai.errors import KbAiError
from wiki import (
    KnowledgeBase,
    append_log,
    atomic_write_bytes,
    atomic_write_text,
    build_catalog,
    commit_all,
    get_meta,
    git,
    open_state,
    read_article,
    set_meta,
    sha256_bytes,
    write_indexes,
)
from wiki.indexing import refresh_search_index
from wiki.lock import KbLock
from wiki.state import (
    RUN_RECORDED,
    clear_journal,
    delete_source,
    get_source,
    journal_article,
    journaled_articles,
    source_articles,
    upsert_source,
)

#: The files a run's recording writes besides its articles (lessons/ is added when the
#: run has agent sessions, whose lessons it learns).
RECORDED_FILES = ("index/master-index.md", "index/topics.md", "log.md")
LESSONS = "lessons"


class Journal:
    """The journal of a run's articles, on one connection to state.db until closed.

    The write stage stores its articles in threads while the event loop checks the
    model's replies; opening state.db for each article (six statements, each a wait for
    the interpreter lock) cost those threads 3-10 ms an article, up to 65 ms. Usable
    from any thread, one at a time."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    @contextmanager
    def writing(self, rel: str) -> Iterator[None]:
        """Around writing the article ``rel``: note its text before, and the hash after."""
        path = self.kb.root / rel
        previous = path.read_text(encoding="utf-8") if path.is_file() else None
        self._note(rel, previous)
        yield
        self._note(rel, previous, sha256_bytes(path.read_bytes()))

    def _note(self, rel: str, previous: str | None, written: str | None = None) -> None:
        with self._lock:
            if self._conn is None:
                self._conn = open_state(self.kb, any_thread=True)
            journal_article(self._conn, rel, previous, written)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


@contextmanager
def journaled(kb: KnowledgeBase, rel: str) -> Iterator[None]:
    """Around writing the one article ``rel``: note its text before, and the hash after."""
    with Journal(kb) as journal, journal.writing(rel):
        yield


def finish_journal(kb: KnowledgeBase) -> None:
    """The run has committed: nothing is left to reconcile."""
    with closing(open_state(kb)) as conn:
        clear_journal(conn)


def unfinished_run(kb: KnowledgeBase) -> bool:
    """Whether a run died with articles written and not committed: a journal is there,
    and no run holds the compile lock (a live run's journal is its own business)."""
    with closing(open_state(kb)) as conn:
        if not journaled_articles(conn) and get_meta(conn, RUN_RECORDED) is None:
            return False
    probe = KbLock(kb.state_dir / "compile.lock")
    if not probe.acquire(blocking=False):
        return False
    probe.release()
    return True


def reconcile(kb: KnowledgeBase) -> str | None:
    """Settle what a killed run left (call holding the compile lock); returns the sha of
    a commit made to keep its recorded work, or None."""
    with closing(open_state(kb)) as conn:
        rows = journaled_articles(conn)
        recorded = get_meta(conn, RUN_RECORDED) is not None
    if not rows and not recorded:
        return None
    commit = _keep(kb, [r["path"] for r in rows]) if recorded else _roll_back(kb, rows)
    finish_journal(kb)
    return commit


def _roll_back(kb: KnowledgeBase, rows: list) -> None:
    undone, kept = [], []
    for row in rows:
        path = kb.root / row["path"]
        current = path.read_bytes() if path.is_file() else None
        previous = row["previous"]
        if current is None or (previous is not None and current == previous.encode("utf-8")):
            continue  # never written, or already as it was
        if row["written"] is not None and sha256_bytes(current) != row["written"]:
            kept.append(row["path"])  # someone changed it since: theirs to keep
            continue
        if previous is None:
            path.unlink()
        else:
            atomic_write_text(path, previous)
        undone.append(row["path"])
    if undone:  # staged while the run wrote (wiki.git.stage_ahead): the index as HEAD again
        git(kb, "reset", "-q", "--", *undone)
    lines = [f"rolled back {p}: written by a run that stopped before recording it" for p in undone]
    lines += [f"kept {p}: changed by hand after a stopped run wrote it" for p in kept]
    if lines:
        append_log(kb, "recover", lines)


def _keep(kb: KnowledgeBase, paths: list[str]) -> str | None:
    fingerprint = write_indexes(kb, build_catalog(kb))
    present = {p: read_article(kb, p) for p in paths if (kb.root / p).is_file()}
    with closing(open_state(kb)) as conn:
        set_meta(conn, INDEX_FINGERPRINT, fingerprint)
        refresh_search_index(kb, conn, sorted(present), present)
    lines = [f"kept {p}: recorded by a run that stopped before its commit" for p in present]
    append_log(kb, "recover", lines or ["committed what a stopped run recorded"])
    try:
        return commit_all(kb, "compile: commit what a stopped run recorded")
    except KbAiError as exc:
        raise KbAiError(
            f"could not commit what a stopped compile left: {exc}",
            hint="fix what git reports, then run kb-ai compile again",
        ) from exc


def before_recording(kb: KnowledgeBase, origins: Iterable[str], *, lessons: bool) -> Recorded:
    """Keep what recording the run's sources (``origins``), its indexes, log.md and (with
    ``lessons``) its lessons will change, for :func:`put_back` (the lesson files it wrote
    are added by :func:`after_learning`)."""
    with closing(open_state(kb)) as conn:
        sources = {}
        for origin in dict.fromkeys(origins):
            row = get_source(conn, origin)
            sources[origin] = (
                None if row is None else {**dict(row), "articles": source_articles(row)}
            )
        meta = {key: get_meta(conn, key) for key in (INDEX_FINGERPRINT, RUN_RECORDED)}
    paths = list(RECORDED_FILES)
    folders: tuple[str, ...] = ()
    if lessons:
        folders = (LESSONS,)
        top = kb.root / LESSONS
        if top.is_dir():
            paths += [p.relative_to(kb.root).as_posix() for p in top.rglob("*") if p.is_file()]
    files = {p: (kb.root / p).read_bytes() if (kb.root / p).is_file() else None for p in paths}
    return Recorded(sources, meta, files, folders)


def after_learning(kb: KnowledgeBase, before: Recorded, written: Iterable[str]) -> Recorded:
    """``before`` with the lesson files the run wrote (``written``) as it wrote them:
    all of lessons/ that :func:`put_back` may change."""
    if LESSONS not in before.folders:
        return before
    wrote = dict(before.wrote)
    for rel in written:
        path = kb.root / rel
        if path.is_file():
            wrote[rel] = path.read_bytes()
    return replace(before, wrote=wrote)


def put_back(kb: KnowledgeBase, before: Recorded) -> None:
    """Undo a run's recording (see :class:`Recorded`): its sources' rows, the meta keys
    and the files as they were; then :func:`reconcile` rolls its articles back."""
    with closing(open_state(kb)) as conn:
        # (on an error the transaction is left uncommitted: closing discards it)
        conn.execute("BEGIN IMMEDIATE")
        for origin, row in before.sources.items():
            if row is None:
                delete_source(conn, origin)
            else:
                upsert_source(conn, **row)
        for key, value in before.meta.items():
            if value is None:
                conn.execute("DELETE FROM meta WHERE key = ?", (key,))
            else:
                set_meta(conn, key, value)
        conn.commit()
    touched = []
    for rel, data in before.files.items():
        path = kb.root / rel
        now = path.read_bytes() if path.is_file() else None
        if now == data or not _the_runs(before, rel, now):
            continue
        touched.append(rel)
        if data is None:
            path.unlink()
        else:
            atomic_write_bytes(path, data)
    for rel, data in before.wrote.items():  # files the recording made there
        path = kb.root / rel
        if rel not in before.files and path.is_file() and path.read_bytes() == data:
            path.unlink()
            touched.append(rel)
    tracked = [p for p in touched if git(kb, "ls-files", "--", p).strip()]
    if tracked:  # staged ahead by the run: the git index as HEAD again for them
        git(kb, "reset", "-q", "--", *tracked)


def _the_runs(before: Recorded, rel: str, now: bytes | None) -> bool:
    """Whether ``rel`` is as the run's recording left it, to be put back: a file of
    ``before.folders`` only when the run wrote it and no one changed it since."""
    if not any(rel.startswith(f"{folder}/") for folder in before.folders):
        return True
    return rel in before.wrote and now == before.wrote[rel]
