"""Review: a compile run held on a branch ``review/<run id>`` until a person approves it.

The run commits on main as usual; :func:`hold_for_review` then moves that commit to its
review branch and puts main (files, indexes, search tables) back as it was, so `kb-ai
ask` and the web UI answer from main only. The run's sources stay recorded as compiled,
so the next compile does not redo them while they wait.

- approve: merge the branch into main. When main moved meanwhile, the generated files
  (indexes, log.md) are merged line by line and the indexes rebuilt from the articles; a
  conflict in an article stops the merge (reject the run and compile again). The search
  tables then take in the articles that changed.
- reject: drop the branch; the run's sources become pending, so the next compile of
  them does the work again. Documents submitted through the web queue have no folder
  to compile again: their tasks fail with the reason and keep their submitted copies,
  so Status offers Retry (or Delete) and nothing a user submitted is lost.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from compiler.queue import TaskQueue
from kb_ai.errors import KbAiError, NotFoundError, UsageError
from wiki import (
    KnowledgeBase,
    append_log,
    apply_migrations,
    build_catalog,
    git,
    head_sha,
    list_articles,
    open_state,
    read_article,
    set_meta,
    write_indexes,
)
from wiki.git import commit_paths
from wiki.indexing import refresh_search_index, remove_from_tables
from wiki.lock import KbLock

PREFIX = "review/"
INDEX_FINGERPRINT = "index_fingerprint"  # compiler/record.py's meta key
MIGRATIONS = (
    """CREATE TABLE reviews (
        run TEXT PRIMARY KEY,
        branch TEXT NOT NULL,
        base TEXT NOT NULL,      -- main's commit the run was taken off
        commit_sha TEXT NOT NULL,
        sources TEXT NOT NULL,   -- JSON list of the run's source origins
        summary TEXT NOT NULL,   -- the run's commit message
        created_at TEXT NOT NULL,
        state TEXT NOT NULL      -- pending | approved | rejected
    )""",
)
_KEPT = ("kb-ai.toml", ".gitignore")  # settings, not the run's work: never held back
_GENERATED = ("index/master-index.md", "index/topics.md", "log.md")


@dataclass(frozen=True)
class Review:
    run: str
    branch: str
    base: str
    commit: str
    sources: list[str]
    summary: str
    created_at: str
    state: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "branch": self.branch,
            "base": self.base,
            "commit": self.commit,
            "sources": self.sources,
            "summary": self.summary,
            "created_at": self.created_at,
            "state": self.state,
        }


@dataclass(frozen=True)
class Rejection:
    """What rejecting a run left to do: ``sources`` (origins) compile again next time;
    ``tasks`` (submitted through the queue) wait on Status, failed, for a Retry."""

    sources: list[str]
    tasks: list[dict[str, Any]]


def _db(kb: KnowledgeBase) -> sqlite3.Connection:
    conn = open_state(kb)
    apply_migrations(conn, "reviews", MIGRATIONS)
    return conn


def hold_for_review(kb: KnowledgeBase, run_id: int | str, commit: str, sources: list[str]) -> str:
    """Move the run's ``commit`` off main onto ``review/<run_id>``; returns the branch."""
    run = str(run_id)
    branch = PREFIX + run
    with KbLock(kb.state_dir / "compile.lock"):
        full = git(kb, "rev-parse", commit).strip()
        if git(kb, "rev-parse", "HEAD").strip() != full:
            raise KbAiError(
                f"main moved on past run {run}'s commit {commit}; it stays on main",
                hint="compile with review on while no other compile runs",
            )
        base = git(kb, "rev-parse", "HEAD~1").strip()
        changed = _changed_articles(kb, base, full)
        settings_files = [
            p for p in git(kb, "diff", "--name-only", base, full, "--", *_KEPT).splitlines() if p
        ]
        git(kb, "branch", "-f", branch, full)
        _undo_on_main(kb, base, full, set(settings_files))
        if settings_files:  # the KB's own settings (categories frozen...) are not held back
            commit_paths(
                kb, f"Settings of compile run {run} (its wiki changes wait on {branch})",
                settings_files,
            )  # fmt: skip
        with closing(_db(kb)) as conn:
            _restore_tables(kb, conn, changed)
            message = git(kb, "log", "-1", "--format=%B", full).strip()
            with conn:
                conn.execute(
                    "INSERT OR REPLACE INTO reviews VALUES (?, ?, ?, ?, ?, ?, ?, 'pending')",
                    (
                        run,
                        branch,
                        base,
                        full,
                        json.dumps(sources, ensure_ascii=False),
                        message,
                        datetime.now(UTC).isoformat(timespec="seconds"),
                    ),
                )
    return branch


def _undo_on_main(kb: KnowledgeBase, base: str, run: str, keep: set[str]) -> None:
    """Main back at ``base``: only the files the run changed are put back (nothing else
    in the directory is touched); ``keep`` stays as the run left it."""
    git(kb, "reset", "-q", base)  # HEAD and index; the files are still the run's
    listed = git(kb, "diff", "--name-status", "--no-renames", "-z", base, run).split("\0")
    pairs = [(listed[i], listed[i + 1]) for i in range(0, len(listed) - 1, 2)]
    restore = [path for status, path in pairs if status != "A" and path not in keep]
    for start in range(0, len(restore), 200):
        git(kb, "checkout", base, "--", *restore[start : start + 200])
    for status, path in pairs:
        if status == "A" and path not in keep:
            file = kb.resolve(path, under="")
            file.unlink(missing_ok=True)
            if file.parent != kb.root and file.parent.is_dir() and not any(file.parent.iterdir()):
                file.parent.rmdir()


def list_reviews(kb: KnowledgeBase, *, pending_only: bool = True) -> list[Review]:
    with closing(_db(kb)) as conn:
        sql = "SELECT * FROM reviews" + (" WHERE state = 'pending'" if pending_only else "")
        rows = conn.execute(sql + " ORDER BY created_at, run").fetchall()
    return [_review(row) for row in rows]


def get_review(kb: KnowledgeBase, run: str) -> Review:
    run = run.removeprefix(PREFIX)
    with closing(_db(kb)) as conn:
        row = conn.execute("SELECT * FROM reviews WHERE run = ?", (run,)).fetchone()
    if row is None:
        raise NotFoundError(
            f"no review run {run!r}", hint="`kb-ai review list` shows the runs waiting"
        )
    return _review(row)


def review_diff(kb: KnowledgeBase, run: str) -> str:
    """What the run changes, against the main it was taken off."""
    review = _pending(kb, run)
    return git(kb, "diff", "--no-color", review.base, review.commit, "--", "wiki", "index")


def approve_review(kb: KnowledgeBase, run: str) -> str | None:
    """Merge the run into main; returns main's new commit."""
    review = _pending(kb, run)
    with KbLock(kb.state_dir / "compile.lock"):
        before = git(kb, "rev-parse", "HEAD").strip()
        moved = before != review.base
        if not moved:
            git(kb, "merge", "-q", "--ff-only", review.commit)
        else:
            _merge(kb, review)
        changed = _changed_articles(kb, before, "HEAD")
        with closing(_db(kb)) as conn:
            _restore_tables(kb, conn, changed)
            with conn:
                conn.execute("UPDATE reviews SET state = 'approved' WHERE run = ?", (review.run,))
            TaskQueue(kb, conn).settle_review(review.branch, approved=True)
        git(kb, "branch", "-q", "-D", review.branch)
    return head_sha(kb)


def reject_review(kb: KnowledgeBase, run: str) -> Rejection:
    """Drop the run; its sources become pending again, its queued submissions failed
    with the reason (to retry from Status)."""
    review = _pending(kb, run)
    with KbLock(kb.state_dir / "compile.lock"), closing(_db(kb)) as conn:
        with conn:
            for origin in review.sources:
                conn.execute(
                    "UPDATE sources SET checksum = NULL, status = 'pending',"
                    " error = 'its run was rejected in review' WHERE origin = ?",
                    (origin,),
                )
            conn.execute("UPDATE reviews SET state = 'rejected' WHERE run = ?", (review.run,))
        tasks = TaskQueue(kb, conn).settle_review(review.branch, approved=False)
        git(kb, "branch", "-q", "-D", review.branch)
    return Rejection(review.sources, tasks)


def _pending(kb: KnowledgeBase, run: str) -> Review:
    review = get_review(kb, run)
    if review.state != "pending":
        raise UsageError(f"run {review.run} was {review.state} already")
    return review


def _merge(kb: KnowledgeBase, review: Review) -> None:
    """Merge a run into a main that moved: generated files line by line, then rebuilt."""
    attributes = kb.root / ".git" / "info" / "attributes"
    attributes.parent.mkdir(parents=True, exist_ok=True)
    rules = "".join(f"{path} merge=union\n" for path in _GENERATED)
    if rules not in (attributes.read_text() if attributes.exists() else ""):
        with attributes.open("a", encoding="utf-8") as f:
            f.write(rules)
    try:
        git(kb, "merge", "-q", "--no-ff", "--no-commit", review.commit)
    except KbAiError as exc:
        conflicts = git(kb, "diff", "--name-only", "--diff-filter=U").split()
        git(kb, "merge", "--abort")
        raise UsageError(
            f"run {review.run} conflicts with main in {', '.join(conflicts) or 'some files'}",
            hint=f"reject it (kb-ai review reject {review.run}) and compile its sources again",
        ) from exc
    fingerprint = write_indexes(kb, build_catalog(kb))  # the union of two indexes, made whole
    append_log(kb, "review", [f"approved run {review.run} ({review.branch})"])
    with closing(open_state(kb)) as conn:
        set_meta(conn, INDEX_FINGERPRINT, fingerprint)
    git(kb, "add", "-A", "--", "index", "log.md")
    git(kb, "commit", "-q", "-m", f"review: approve run {review.run}\n\n{review.summary}")


def _changed_articles(kb: KnowledgeBase, old: str, new: str) -> list[str]:
    out = git(kb, "diff", "--name-only", "--no-renames", old, new, "--", "wiki")
    return [p for p in out.splitlines() if p.endswith(".md")]


def _restore_tables(kb: KnowledgeBase, conn: sqlite3.Connection, changed: list[str]) -> None:
    """The search tables and index fingerprint for the articles on disk now."""
    on_disk = set(list_articles(kb))
    remove_from_tables(conn, [p for p in changed if p not in on_disk])
    present = [p for p in changed if p in on_disk]
    refresh_search_index(kb, conn, present, {p: read_article(kb, p) for p in present})
    set_meta(conn, INDEX_FINGERPRINT, None)  # indexes replaced by git: read them afresh


def _review(row: sqlite3.Row) -> Review:
    return Review(
        run=row["run"],
        branch=row["branch"],
        base=row["base"],
        commit=row["commit_sha"],
        sources=json.loads(row["sources"]),
        summary=row["summary"],
        created_at=row["created_at"],
        state=row["state"],
    )
