"""Review held compile runs through the application layer: a reviewer approves or
rejects a whole run or single articles of it, with a comment that the audit log and
the commit message keep; approving merges into main with the actor as the author.

A person may not decide on a run they submitted themselves unless
``review_self_approve`` is on. The rule binds the people of a served knowledge base;
the CLI user at the terminal owns the files, so it does not bind them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from compiler.review import (
    Rejection,
    Review,
    approve_review,
    get_review,
    held_versions,
    list_reviews,
    reject_review,
    review_diff,
)
from compiler.review_articles import (
    ArticleChange,
    any_decided,
    approve_articles,
    article_changes,
    article_diff,
    reject_articles,
    undecided,
)
from kb_ai.errors import UsageError
from kb_ai.service.errors import SelfReviewError
from kb_ai.service.opened import OpenKb
from kb_ai.service.people import audit
from kb_ai.service.remote import publish

MAX_COMMENT = 2_000


def reviews(okb: OpenKb) -> list[Review]:
    """The runs waiting for review."""
    return list_reviews(okb.kb)


def review(okb: OpenKb, run: str) -> Review:
    return get_review(okb.kb, run)


def diff(okb: OpenKb, run: str) -> str:
    """What the run changes, as a diff against main."""
    return review_diff(okb.kb, run)


def articles(okb: OpenKb, review: Review) -> list[tuple[ArticleChange, str]]:
    """Each article the run changes, with its decision so far and its own diff."""
    return [(c, article_diff(okb.kb, review, c.path)) for c in article_changes(okb.kb, review)]


def held(okb: OpenKb, review: Review) -> list[dict[str, str]]:
    """For a review of articles a person edited: each one's two versions (the person's
    on main, kb-ai's new one) and what approving puts on main."""
    return held_versions(okb.kb, review)


def approve(
    okb: OpenKb,
    run: str,
    *,
    articles: Sequence[str] = (),
    comment: str = "",
    address: str = "cli",
) -> str | None:
    """Merge the run (or only ``articles`` of it) into main; returns main's new commit."""
    return _decide(okb, run, "approve", articles, comment, address)


def reject(
    okb: OpenKb,
    run: str,
    *,
    articles: Sequence[str] = (),
    comment: str = "",
    address: str = "cli",
) -> Rejection | None:
    """Drop the run (or only ``articles`` of it: main keeps its versions); a whole run's
    sources compile again next time. None when the run is still partly waiting or was
    partly approved."""
    return _decide(okb, run, "reject", articles, comment, address)


# action -> (its verb on single articles, its verb on a whole run)
_VERBS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "approve": (approve_articles, approve_review),
    "reject": (reject_articles, reject_review),
}


def _decide(
    okb: OpenKb, run: str, action: str, articles: Sequence[str], comment: str, address: str
) -> Any:
    """``action`` on the run or ``articles`` of it, audited with the comment; a plain
    decision on a run decided in part already decides the articles left."""
    found, comment = _may_decide(okb, run, comment)
    okb.note(action, found.run)
    on_articles, on_run = _VERBS[action]
    if not articles and any_decided(okb.kb, found):
        outcome = on_articles(okb.kb, found.run, undecided(okb.kb, found), comment)
    elif articles:
        outcome = on_articles(okb.kb, found.run, articles, comment)
    else:
        outcome = on_run(okb.kb, found.run, comment)
    audit(okb, action, _target(found, articles), comment, address)
    publish(okb)  # what reached main goes to the wiki remote, if it follows one
    return outcome


def _may_decide(okb: OpenKb, run: str, comment: str) -> tuple[Review, str]:
    """The review, and the comment made one paragraph; refuses a person's own run."""
    found = get_review(okb.kb, run)
    comment = " ".join(comment.split())  # one paragraph: a log.md item, an audit field
    if len(comment) > MAX_COMMENT:
        raise UsageError(
            f"the comment is {len(comment):,} characters; a review comment holds {MAX_COMMENT:,}",
            hint="say why in short; a longer review belongs in the wiki or the tracker",
        )
    actor = okb.actor
    own = actor.kind == "person" and found.submitted_by == actor.name
    if own and not okb.settings.review_self_approve:
        raise SelfReviewError(
            f"{actor.name} submitted run {found.run}: another reviewer decides on it",
            hint="ask another reviewer, or an admin can set review_self_approve = true",
        )
    return found, comment


def _target(found: Review, articles: Sequence[str]) -> str:
    return f"run {found.run}" + (f": {', '.join(articles)}" if articles else "")
