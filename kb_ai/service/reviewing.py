"""Review held compile runs through the application layer: approving merges into main
with the actor as the merge commit's author."""

from __future__ import annotations

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
from kb_ai.service.opened import OpenKb
from kb_ai.service.remote import publish


def reviews(okb: OpenKb) -> list[Review]:
    """The runs waiting for review."""
    return list_reviews(okb.kb)


def review(okb: OpenKb, run: str) -> Review:
    return get_review(okb.kb, run)


def diff(okb: OpenKb, run: str) -> str:
    """What the run changes, as a diff against main."""
    return review_diff(okb.kb, run)


def held(okb: OpenKb, review: Review) -> list[dict[str, str]]:
    """For a review of articles a person edited: each one's two versions (the person's
    on main, kb-ai's new one) and what approving puts on main."""
    return held_versions(okb.kb, review)


def approve(okb: OpenKb, run: str) -> str | None:
    """Merge the run into main; returns main's new commit."""
    okb.note("approve", run)
    sha = approve_review(okb.kb, run)
    publish(okb)
    return sha


def reject(okb: OpenKb, run: str) -> Rejection:
    """Drop the run; its sources compile again next time."""
    okb.note("reject", run)
    return reject_review(okb.kb, run)
