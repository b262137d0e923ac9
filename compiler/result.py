"""What a compile run reports: per source, per article, and the model use."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from compiler.redact import redact, redact_name
from kb_ai.llm import Usage


@dataclass
class Failure:
    """A source that did not compile, and why. Both are redacted as they are made: a file
    name or an error quoting one ("creds-ghp_....md: the file is empty") reaches the
    compile output, state.db, log.md and the Status page."""

    source: str
    error: str

    def __post_init__(self) -> None:
        self.source, self.error = redact_name(self.source), redact(self.error)[0]

    def as_dict(self) -> dict[str, str]:
        return {"source": self.source, "error": self.error}


@dataclass(frozen=True)
class Deletion:
    """An article the run deleted: no source was left to it, because each source in
    ``left`` (raw path -> the file it was compiled from) no longer feeds it."""

    path: str
    left: tuple[tuple[str, str], ...]

    @property
    def cause(self) -> str:
        """Why it went, for log.md and the commit message."""
        names = " and ".join(f"{raw} (from {origin})" for raw, origin in self.left)
        verb = "feeds" if len(self.left) == 1 else "feed"
        return f"no source left: {names} no longer {verb} it"

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "left": [{"raw_path": raw, "origin": origin} for raw, origin in self.left],
        }


@dataclass(frozen=True)
class Revision:
    """A document the run took as a revision of the source in ``raw_path``, and how it
    knew (see compiler/identity.py)."""

    origin: str
    raw_path: str
    way: str
    similarity: float | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"origin": self.origin, "raw_path": self.raw_path, "way": self.way}
        if self.similarity is not None:
            out["similarity"] = round(self.similarity, 3)
        return out


#: The way of a document whose text is that of another this run compiles: one source.
COPY = "the same text, a copy in this run"


@dataclass(frozen=True)
class MaybeRevision:
    """A document compiled as a new source (``raw_path``) that may revise one of
    ``candidates`` ((raw path, similarity), best first): a person says which."""

    origin: str
    raw_path: str
    candidates: tuple[tuple[str, float], ...]
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "raw_path": self.raw_path,
            "candidates": [{"raw_path": r, "similarity": round(s, 3)} for r, s in self.candidates],
            "reason": self.reason,
        }


@dataclass
class CompileResult:
    sources: int = 0
    compiled: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[Failure] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[Deletion] = field(default_factory=list)  # articles with no source left
    commit: str | None = None
    usage: Usage = field(default_factory=Usage)
    interrupted: bool = False
    duration_s: float = 0.0
    redactions: int = 0  # secrets and <private> spans removed before storing or sending
    checks: list[str] = field(default_factory=list)  # what the checks changed to accept a reply
    review: str | None = None  # the branch the run waits on for approval (review mode)
    revisions: list[Revision] = field(default_factory=list)  # documents known as revisions
    maybe_revisions: list[MaybeRevision] = field(default_factory=list)  # new, perhaps not
    # raw copies a revision said to be of another source replaced: (old, the one now)
    superseded: list[tuple[str, str]] = field(default_factory=list)
    held: list[str] = field(default_factory=list)  # articles whose update meets a hand edit
    held_review: str | None = None  # the branch those updates wait on
    lessons_found: int = 0  # lessons the run's sessions showed, new or known (sightings)
    lessons_new: list[str] = field(default_factory=list)  # lessons the sessions taught (ids)
    lessons_seen: list[str] = field(default_factory=list)  # known lessons shown again

    def as_dict(self) -> dict[str, Any]:
        return {
            "sources": self.sources,
            "compiled": self.compiled,
            "skipped": self.skipped,
            "failed": [f.as_dict() for f in self.failed],
            "created": self.created,
            "updated": self.updated,
            "deleted": [d.as_dict() for d in self.deleted],
            "commit": self.commit,
            "usage": self.usage.as_dict(),
            "interrupted": self.interrupted,
            "duration_s": round(self.duration_s, 3),
            "redactions": self.redactions,
            "checks": self.checks,
            "review": self.review,
            "revisions": [r.as_dict() for r in self.revisions],
            "maybe_revisions": [m.as_dict() for m in self.maybe_revisions],
            "superseded": [{"raw_path": old, "by": new} for old, new in self.superseded],
            "held": self.held,
            "held_review": self.held_review,
            "lessons_found": self.lessons_found,
            "lessons_new": self.lessons_new,
            "lessons_seen": self.lessons_seen,
        }
