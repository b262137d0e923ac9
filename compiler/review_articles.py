"""Single articles of a held run, approved or rejected one by one.

A reviewer may take some of a run's articles and leave others (compiler/review.py holds
the run on ``review/<run>``):

- approving an article puts the run's version of it on main (its merge base under
  bases/ too), with the indexes rebuilt, in one commit by the reviewer whose message
  carries their comment. The first approval also brings the run's other files (raw/,
  extraction/): the sources are then compiled on main. An article that changed on main
  since the run was held is refused (reject it, and compile its source again);
- rejecting an article keeps main's version; log.md and a commit say who and why;
- once every article of the run is decided, the review is settled: approved when at
  least one article was (its submitted copies go), else rejected as a whole run is
  (its sources compile again next time, its submissions wait on Status for a Retry).

Its sources count as compiled once an article is approved, so a rejected article of a
partly approved run is written again only when its source changes (or with
``kb-ai compile --force``).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import closing
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from compiler.queue import TaskQueue
from compiler.review import (
    GENERATED,
    INDEX_FINGERPRINT,
    KEPT,
    Rejection,
    Review,
    pending_review,
    record_decision,
    reject_review,
    restore_tables,
    review_message,
    reviews_db,
)
from kb_ai.errors import UsageError
from wiki import KnowledgeBase, append_log, build_catalog, git, set_meta, write_indexes
from wiki.git import _run, commit_paths
from wiki.hand_edits import BASES, base_path
from wiki.lock import compile_lock


@dataclass(frozen=True)
class ArticleChange:
    """One article a held run changes: ``status`` A (new), M or D (deleted), and what a
    reviewer decided of it so far ("" while undecided)."""

    path: str
    status: str
    decision: str = ""
    by: str = ""
    comment: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def article_changes(kb: KnowledgeBase, review: Review) -> list[ArticleChange]:
    """The articles ``review`` changes, in path order, with the decisions made."""
    out = git(kb, "diff", "--name-status", "--no-renames", review.base, review.commit, "--", "wiki")
    with closing(reviews_db(kb)) as conn:
        rows = conn.execute(
            "SELECT path, decision, by, comment FROM review_articles WHERE run = ?", (review.run,)
        ).fetchall()
    decided = {r["path"]: (r["decision"], r["by"], r["comment"]) for r in rows}
    changes = []
    for line in out.splitlines():
        status, _, path = line.partition("\t")
        if path.endswith(".md"):
            changes.append(ArticleChange(path, status[:1], *decided.get(path, ("", "", ""))))
    return sorted(changes, key=lambda c: c.path)


def article_diff(kb: KnowledgeBase, review: Review, path: str) -> str:
    """What the run changes in one article, against the main it was taken off."""
    return git(kb, "diff", "--no-color", review.base, review.commit, "--", path)


def undecided(kb: KnowledgeBase, review: Review) -> list[str]:
    return [c.path for c in article_changes(kb, review) if not c.decision]


def any_decided(kb: KnowledgeBase, review: Review) -> bool:
    return any(c.decision for c in article_changes(kb, review))


def approve_articles(
    kb: KnowledgeBase, run: str, paths: Sequence[str], comment: str = ""
) -> str | None:
    """Put the run's version of ``paths`` on main, in one commit by the reviewer; returns
    main's new commit."""
    review = pending_review(kb, run)
    changes = article_changes(kb, review)
    paths = _undecided(review, changes, paths)
    with compile_lock(kb):
        for path in paths:
            _unchanged_on_main(kb, review, path)
        files = [] if any(c.decision == "approved" for c in changes) else _run_files(kb, review)
        for path in paths:
            files += [path, base_path(path)]
        files = [f for f in files if _take(kb, review, f)]
        fingerprint = write_indexes(kb, build_catalog(kb))
        what = f"approved {', '.join(paths)} of run {review.run}"
        append_log(kb, "review", [what + (f": {comment}" if comment else "")])
        commit = commit_paths(
            kb, review_message(what, comment), [*files, *GENERATED]
        )  # fmt: skip
        with closing(reviews_db(kb)) as conn:
            set_meta(conn, INDEX_FINGERPRINT, fingerprint)
            restore_tables(kb, conn, list(paths))
            _decide(kb, conn, review, paths, "approved", comment)
        _settle_if_done(kb, review)
    return commit


def reject_articles(
    kb: KnowledgeBase, run: str, paths: Sequence[str], comment: str = ""
) -> Rejection | None:
    """Keep main's version of ``paths``; log.md and a commit by the reviewer say so. When
    no article of the run is left and none was approved, the run is rejected as a whole
    (its Rejection is returned)."""
    review = pending_review(kb, run)
    changes = article_changes(kb, review)
    paths = _undecided(review, changes, paths)
    if not any(c.decision == "approved" for c in changes) and set(paths) == {
        c.path for c in changes if not c.decision
    }:
        with closing(reviews_db(kb)) as conn, conn:
            conn.execute("DELETE FROM review_articles WHERE run = ?", (review.run,))
        return reject_review(kb, review.run, comment)  # nothing of it taken: all of it goes
    with compile_lock(kb):
        record_decision(kb, f"rejected {', '.join(paths)} of run {review.run}", comment)
        with closing(reviews_db(kb)) as conn:
            _decide(kb, conn, review, paths, "rejected", comment)
        _settle_if_done(kb, review)
    return None


def _undecided(review: Review, changes: list[ArticleChange], paths: Sequence[str]) -> list[str]:
    by_path = {c.path: c for c in changes}
    wanted = list(dict.fromkeys(p.strip() for p in paths if p.strip()))
    if not wanted:
        raise UsageError("name the article(s) to decide on", hint=f"kb-ai review show {review.run}")
    for path in wanted:
        if path not in by_path:
            raise UsageError(
                f"run {review.run} does not change {path}",
                hint="its articles: " + ", ".join(by_path) if by_path else "it changes none",
            )
        if by_path[path].decision:
            raise UsageError(f"{path} of run {review.run} was {by_path[path].decision} already")
    return wanted


def _unchanged_on_main(kb: KnowledgeBase, review: Review, path: str) -> None:
    """Refuse an article main changed since the run was taken off it."""
    blobs = [_blob(kb, rev, path) for rev in ("HEAD", review.base, review.commit)]
    if blobs[0] not in (blobs[1], blobs[2]):
        raise UsageError(
            f"{path} changed on main since run {review.run} was held",
            hint=f"reject it (kb-ai review reject {review.run} --article {path}) and"
            " compile its sources again",
        )


def _blob(kb: KnowledgeBase, rev: str, path: str) -> str:
    found = _run(kb, ("rev-parse", "-q", "--verify", f"{rev}:{path}"), check=False)
    return found.stdout.strip() if found.returncode == 0 else ""


def _run_files(kb: KnowledgeBase, review: Review) -> list[str]:
    """The run's files that are not articles, indexes or merge bases (raw/, extraction/)."""
    out = git(kb, "diff", "--name-only", "--no-renames", review.base, review.commit)
    skip = ("wiki/", "index/", f"{BASES}/")
    return [
        p for p in out.splitlines()
        if p and not p.startswith(skip) and p not in GENERATED and p not in KEPT
    ]  # fmt: skip


def _take(kb: KnowledgeBase, review: Review, rel: str) -> bool:
    """The run's version of ``rel`` on disk (gone, when the run has none); False when
    neither the run nor main has it (nothing to commit)."""
    if _blob(kb, review.commit, rel):
        git(kb, "checkout", review.commit, "--", rel)
        return True
    kb.resolve(rel, under="").unlink(missing_ok=True)
    return bool(_blob(kb, "HEAD", rel))


def _decide(kb, conn, review: Review, paths: Sequence[str], decision: str, comment: str) -> None:
    who = kb.actor.name if kb.actor is not None else "kb-ai"
    at = datetime.now(UTC).isoformat(timespec="seconds")
    with conn:
        conn.executemany(
            "INSERT INTO review_articles VALUES (?, ?, ?, ?, ?, ?)",
            [(review.run, p, decision, who, comment, at) for p in paths],
        )


def _settle_if_done(kb: KnowledgeBase, review: Review) -> None:
    """Once every article is decided (some approved): the review is approved, its
    submitted copies go, its branch is dropped. Call under the compile lock."""
    changes = article_changes(kb, review)
    if any(not c.decision for c in changes):
        return
    with closing(reviews_db(kb)) as conn:
        with conn:
            conn.execute("UPDATE reviews SET state = 'approved' WHERE run = ?", (review.run,))
        TaskQueue(kb, conn).settle_review(review.branch, approved=True)
    git(kb, "branch", "-q", "-D", review.branch)
