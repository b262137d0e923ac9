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
import tempfile
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
from wiki.git import _run, commit_paths, signed
from wiki.hand_edits import base_path
from wiki.indexing import refresh_search_index, remove_from_tables
from wiki.lint import WARNING, Finding
from wiki.lock import compile_lock

if TYPE_CHECKING:
    from compiler.hand_edits import Held

PREFIX = "review/"
EDITS = "-edits"  # a review of kb-ai's updates of hand-edited articles: review/<run>-edits
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
    "ALTER TABLE reviews ADD COLUMN reason TEXT NOT NULL DEFAULT ''",  # why it was held
    # decisions on single articles of a run (compiler/review_articles.py)
    """CREATE TABLE review_articles (
        run TEXT NOT NULL,
        path TEXT NOT NULL,
        decision TEXT NOT NULL,  -- approved | rejected
        by TEXT NOT NULL,
        comment TEXT NOT NULL,
        at TEXT NOT NULL,
        PRIMARY KEY (run, path)
    )""",
)
#: What a review shows as kb-ai's version of an article it would delete.
DELETES = (
    "(none: its last source left, so kb-ai would delete this article; approve deletes it, "
    "reject keeps it as the person left it)"
)
COLUMNS = "(run, branch, base, commit_sha, sources, summary, created_at, state, reason)"
KEPT = ("kb-ai.toml", ".gitignore")  # settings, not the run's work: never held back
GENERATED = ("index/master-index.md", "index/topics.md", "log.md")


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
    reason: str = ""  # why it waits (review_policy), "" for older runs
    submitted_by: str = ""  # the author of its commit: who submitted the run

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
            "reason": self.reason,
            "submitted_by": self.submitted_by,
        }


@dataclass(frozen=True)
class Rejection:
    """What rejecting a run left to do: ``sources`` (origins) compile again next time;
    ``tasks`` (submitted through the queue) wait on Status, failed, for a Retry."""

    sources: list[str]
    tasks: list[dict[str, Any]]


def reviews_db(kb: KnowledgeBase) -> sqlite3.Connection:
    conn = open_state(kb)
    apply_migrations(conn, "reviews", MIGRATIONS)
    return conn


def hold_for_review(
    kb: KnowledgeBase, run_id: int | str, commit: str, sources: list[str], reason: str = ""
) -> str:
    """Move the run's ``commit`` off main onto ``review/<run_id>`` (``reason``: why it
    waits, shown to reviewers); returns the branch."""
    run = str(run_id)
    branch = PREFIX + run
    with compile_lock(kb):
        full = git(kb, "rev-parse", commit).strip()
        if git(kb, "rev-parse", "HEAD").strip() != full:
            raise KbAiError(
                f"main moved on past run {run}'s commit {commit}; it stays on main",
                hint="compile with review on while no other compile runs",
            )
        base = git(kb, "rev-parse", "HEAD~1").strip()
        changed = _changed_articles(kb, base, full)
        settings_files = [
            p for p in git(kb, "diff", "--name-only", base, full, "--", *KEPT).splitlines() if p
        ]
        git(kb, "branch", "-f", branch, full)
        _undo_on_main(kb, base, full, set(settings_files))
        if settings_files:  # the KB's own settings (categories frozen...) are not held back
            commit_paths(
                kb, f"Settings of compile run {run} (its wiki changes wait on {branch})",
                settings_files,
            )  # fmt: skip
        with closing(reviews_db(kb)) as conn:
            restore_tables(kb, conn, changed)
            message = git(kb, "log", "-1", "--format=%B", full).strip()
            with conn:
                conn.execute(
                    f"INSERT OR REPLACE INTO reviews {COLUMNS}"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?)",
                    (
                        run,
                        branch,
                        base,
                        full,
                        json.dumps(sources, ensure_ascii=False),
                        message,
                        datetime.now(UTC).isoformat(timespec="seconds"),
                        reason,
                    ),
                )
    return branch


def hold_hand_edits(kb: KnowledgeBase, run_id: int | str, held: Sequence[Held]) -> str:
    """Put kb-ai's updates of articles a person changed on ``review/<run>-edits``, off
    main as it is: main keeps the person's versions until a person approves. Returns
    the branch. (Made with git's plumbing: the working tree and index stay as they are.)"""
    run = f"{run_id}{EDITS}"
    branch = PREFIX + run
    lines = [f"review: kb-ai's update of {len(held)} hand-edited article(s) (run {run_id})", ""]
    with compile_lock(kb), tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        head = git(kb, "rev-parse", "HEAD").strip()
        _run(kb, ("read-tree", head), env=env)
        for h in held:
            if h.deletes:  # approving deletes the article (and kb-ai's kept version of it)
                for rel in (h.path, base_path(h.path)):
                    _run(kb, ("update-index", "--force-remove", rel), env=env)
                lines.append(f"held {h.path}: {h.reason}; the hand edit ({h.by}) stays on main")
                continue
            blob = _run(kb, ("hash-object", "-w", "--stdin"), stdin=h.proposal).stdout.strip()
            _run(kb, ("update-index", "--add", "--cacheinfo", f"100644,{blob},{h.path}"), env=env)
            if h.proposal != h.generated:  # the merge base after approval: kb-ai's own
                blob = _run(kb, ("hash-object", "-w", "--stdin"), stdin=h.generated).stdout.strip()
                info = f"100644,{blob},{base_path(h.path)}"
                _run(kb, ("update-index", "--add", "--cacheinfo", info), env=env)
            else:
                _run(kb, ("update-index", "--force-remove", base_path(h.path)), env=env)
            lines.append(f"held {h.path}: {h.reason}; the hand edit ({h.by}) stays on main")
        tree = _run(kb, ("write-tree",), env=env).stdout.strip()
        message = signed("\n".join(lines))
        commit = git(kb, "commit-tree", tree, "-p", head, "-m", message).strip()
        git(kb, "branch", "-f", branch, commit)
        with closing(reviews_db(kb)) as conn, conn:
            conn.execute(
                f"INSERT OR REPLACE INTO reviews {COLUMNS}"
                " VALUES (?, ?, ?, ?, '[]', ?, ?, 'pending', ?)",
                (run, branch, head, commit, message,
                 datetime.now(UTC).isoformat(timespec="seconds"),
                 "kb-ai's update meets a hand edit"),
            )  # fmt: skip
    return branch


def held_versions(kb: KnowledgeBase, review: Review) -> list[dict[str, str]]:
    """For a review of hand-edited articles: each article's two versions, the person's
    (on main) and kb-ai's new one, and what approving puts on main."""
    if not review.run.endswith(EDITS):
        return []
    out = []
    for path in _changed_articles(kb, review.base, review.commit):
        person = _run(kb, ("show", f"HEAD:{path}"), check=False)
        shown = _run(kb, ("show", f"{review.commit}:{path}"), check=False)
        if shown.returncode != 0:  # held instead of deleted: its last source left
            proposal = ""
            kb_ai = DELETES
        else:
            proposal = shown.stdout
            kept = _run(kb, ("show", f"{review.commit}:{base_path(path)}"), check=False)
            kb_ai = kept.stdout if kept.returncode == 0 else proposal
        out.append(
            {
                "path": path,
                "person": person.stdout if person.returncode == 0 else "",
                "kb_ai": kb_ai,
                "proposal": proposal,
            }
        )
    return out


def waiting_hand_edits(kb: KnowledgeBase) -> list[Finding]:
    """`kb-ai lint`'s findings for the articles whose update waits on a hand edit."""
    findings = []
    for review in list_reviews(kb):
        if not review.run.endswith(EDITS):
            continue
        for line in review.summary.splitlines():
            if line.startswith("held "):
                path, _, why = line[5:].partition(": ")
                findings.append(Finding("hand-edit", WARNING, path,
                    f"kb-ai's update waits for review ({why}): `kb-ai review show {review.run}`,"
                    " then approve (kb-ai's version) or reject (keep the hand edit)"))  # fmt: skip
    return findings


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
    with closing(reviews_db(kb)) as conn:
        sql = "SELECT * FROM reviews" + (" WHERE state = 'pending'" if pending_only else "")
        rows = conn.execute(sql + " ORDER BY created_at, run").fetchall()
    return [_review(kb, row) for row in rows]


def get_review(kb: KnowledgeBase, run: str) -> Review:
    run = run.removeprefix(PREFIX)
    with closing(reviews_db(kb)) as conn:
        row = conn.execute("SELECT * FROM reviews WHERE run = ?", (run,)).fetchone()
    if row is None:
        raise NotFoundError(
            f"no review run {run!r}", hint="`kb-ai review list` shows the runs waiting"
        )
    return _review(kb, row)


def review_diff(kb: KnowledgeBase, run: str) -> str:
    """What the run changes, against the main it was taken off."""
    review = pending_review(kb, run)
    return git(kb, "diff", "--no-color", review.base, review.commit, "--", "wiki", "index")


def approve_review(kb: KnowledgeBase, run: str, comment: str = "") -> str | None:
    """Merge the run into main, then say in log.md and a commit by the reviewer (the
    knowledge base's actor) who approved it and their ``comment``; returns main's new
    commit."""
    review = pending_review(kb, run)
    with compile_lock(kb):
        before = git(kb, "rev-parse", "HEAD").strip()
        moved = before != review.base
        if not moved:
            git(kb, "merge", "-q", "--ff-only", review.commit)
        else:
            _merge(kb, review, comment)
        if review.run.endswith(EDITS):  # held articles only: their index lines follow
            _index_approved(kb, review, comment)
        elif not moved:  # main has the run's own commit: the approval needs one of its own
            record_decision(kb, f"approved run {review.run}", comment)
        changed = _changed_articles(kb, before, "HEAD")
        with closing(reviews_db(kb)) as conn:
            restore_tables(kb, conn, changed)
            with conn:
                conn.execute("UPDATE reviews SET state = 'approved' WHERE run = ?", (review.run,))
            TaskQueue(kb, conn).settle_review(review.branch, approved=True)
        git(kb, "branch", "-q", "-D", review.branch)
    return head_sha(kb)


def reject_review(kb: KnowledgeBase, run: str, comment: str = "") -> Rejection:
    """Drop the run; its sources become pending again, its queued submissions failed
    with the reason (to retry from Status). log.md and a commit by the reviewer say who
    rejected it and their ``comment``."""
    review = pending_review(kb, run)
    with compile_lock(kb), closing(reviews_db(kb)) as conn:
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
        record_decision(kb, f"rejected run {review.run}", comment)
    return Rejection(review.sources, tasks)


def record_decision(kb: KnowledgeBase, what: str, comment: str) -> str | None:
    """A reviewer's decision in log.md and a commit of its own (by the reviewer), its
    message carrying their comment. Call under the compile lock."""
    append_log(kb, "review", [what + (f": {comment}" if comment else "")])
    return commit_paths(kb, review_message(what, comment), ["log.md"])


def review_message(what: str, comment: str) -> str:
    """A review commit's message: ``review: <what>``, then the reviewer's comment."""
    return f"review: {what}" + (f"\n\n{comment.strip()}" if comment.strip() else "")


def pending_review(kb: KnowledgeBase, run: str) -> Review:
    review = get_review(kb, run)
    if review.state != "pending":
        raise UsageError(f"run {review.run} was {review.state} already")
    return review


def _merge(kb: KnowledgeBase, review: Review, comment: str) -> None:
    """Merge a run into a main that moved: generated files line by line, then rebuilt."""
    attributes = kb.root / ".git" / "info" / "attributes"
    attributes.parent.mkdir(parents=True, exist_ok=True)
    rules = "".join(f"{path} merge=union\n" for path in GENERATED)
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
    said = f": {comment}" if comment else ""
    append_log(kb, "review", [f"approved run {review.run} ({review.branch}){said}"])
    with closing(open_state(kb)) as conn:
        set_meta(conn, INDEX_FINGERPRINT, fingerprint)
    git(kb, "add", "-A", "--", "index", "log.md")
    message = review_message(f"approved run {review.run}", comment)
    git(kb, "commit", "-q", "-m", signed(f"{message}\n\n{review.summary}"))


def _index_approved(kb: KnowledgeBase, review: Review, comment: str) -> None:
    """The indexes and log.md after approving a review of hand-edited articles (its
    branch holds the articles only), in a commit of their own."""
    fingerprint = write_indexes(kb, build_catalog(kb))
    said = f": {comment}" if comment else ""
    what = f"approved kb-ai's update of hand-edited articles ({review.branch}){said}"
    append_log(kb, "review", [what])
    with closing(open_state(kb)) as conn:
        set_meta(conn, INDEX_FINGERPRINT, fingerprint)
    commit_paths(kb, review_message(f"approve {review.run}: indexes", comment), ["index", "log.md"])


def _changed_articles(kb: KnowledgeBase, old: str, new: str) -> list[str]:
    out = git(kb, "diff", "--name-only", "--no-renames", old, new, "--", "wiki")
    return [p for p in out.splitlines() if p.endswith(".md")]


def restore_tables(kb: KnowledgeBase, conn: sqlite3.Connection, changed: list[str]) -> None:
    """The search tables and index fingerprint for the articles on disk now."""
    on_disk = set(list_articles(kb))
    remove_from_tables(conn, [p for p in changed if p not in on_disk])
    present = [p for p in changed if p in on_disk]
    refresh_search_index(kb, conn, present, {p: read_article(kb, p) for p in present})
    set_meta(conn, INDEX_FINGERPRINT, None)  # indexes replaced by git: read them afresh


def _review(kb: KnowledgeBase, row: sqlite3.Row) -> Review:
    author = _run(kb, ("log", "-1", "--format=%an", row["commit_sha"]), check=False)
    return Review(
        run=row["run"],
        branch=row["branch"],
        base=row["base"],
        commit=row["commit_sha"],
        sources=json.loads(row["sources"]),
        summary=row["summary"],
        created_at=row["created_at"],
        state=row["state"],
        reason=row["reason"],
        submitted_by=author.stdout.strip() if author.returncode == 0 else "",
    )
