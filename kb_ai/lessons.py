"""Lessons: the pitfalls and conventions agent sessions taught, each with how sure the
knowledge base is of it.

A lesson is one file, ``lessons/<id>.md``, versioned with the wiki: frontmatter
(``confidence``, ``seen``, ``last_seen``, ``status``, the sessions that showed it, the
articles that hold it) and the lesson in Markdown. compiler/lessons.py learns them from
each compile's sessions; a person approves or rejects them (kb_ai/service/learned.py);
the session-start snapshot (kb_ai/hooks/snapshot.py) shows the surest.

How sure: a lesson starts at ``lesson_start`` (0.5), each later session that shows it
again adds ``lesson_step`` (0.05) up to ``lesson_max`` (0.9), and every
``lesson_decay_days`` (30) it goes unseen takes ``lesson_decay`` (0.05) off (seen
again, it goes on from what is left, or from the start if less is left). At or above
``lesson_threshold`` (0.55) it is *active* and may enter the snapshot; a lesson seen
once is *new* (a guess: the snapshot leaves it out); one that falls below the threshold
after a second sighting, or fades before one, is *deprecated*: out of the snapshot,
marked in its file, never deleted, and back if a session shows it again. A person's
verdict outranks the numbers: *approved* lessons rank first, *rejected* ones stay out
whatever the evidence, *pending* ones (``learn_review = true``) wait for a verdict.

This module is the hooks' too: it imports nothing heavier than ``json``, and its files
are written in a form it reads without YAML (every value one JSON literal, which is
also YAML).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any

LESSONS_DIR = "lessons"
KINDS = ("pitfall", "convention")
# what a person or kb-ai set; "active", "new" are standings, computed (see standing)
STATUSES = ("learned", "pending", "approved", "rejected", "deprecated")
SHOWN = ("approved", "active")  # the standings the snapshot shows, in this order


@dataclass(frozen=True)
class Rules:
    """The numbers of confidence (settings ``lesson_*``, whose defaults are the only ones:
    :meth:`defaults`)."""

    start: float
    step: float
    top: float
    decay: float
    decay_days: float
    threshold: float

    @classmethod
    def of(cls, settings: Any) -> Rules:
        return cls(
            start=settings.lesson_start,
            step=settings.lesson_step,
            top=settings.lesson_max,
            decay=settings.lesson_decay,
            decay_days=settings.lesson_decay_days,
            threshold=settings.lesson_threshold,
        )

    @classmethod
    def defaults(cls) -> Rules:
        """The settings' defaults (what a kb-ai.toml that does not load ranks by)."""
        from kb_ai.settings import Settings  # here: the hooks import this module bare

        return cls.of(Settings())


@dataclass(frozen=True)
class Lesson:
    id: str
    kind: str  # pitfall | convention
    text: str  # the lesson in one line
    confidence: float  # as of last_seen; time unseen lowers it (Rules)
    seen: int  # sessions that showed it
    first_seen: str  # ISO dates
    last_seen: str
    status: str = "learned"  # see STATUSES
    error: str = ""  # a pitfall's error as it appeared
    files: tuple[str, ...] = ()  # commands run or files changed
    sessions: tuple[str, ...] = ()  # the raw paths of the sessions that showed it
    articles: tuple[str, ...] = ()  # the wiki articles that hold it
    decided_by: str = ""  # who approved or rejected it
    details: str = ""  # the body: error, cause, fix; or the convention and its reason

    @property
    def path(self) -> str:
        return f"{LESSONS_DIR}/{self.id}.md"


@dataclass(frozen=True)
class Standing:
    """Where a lesson stands on a day: ``state`` (approved, active, new, pending,
    rejected, deprecated) and its confidence then."""

    lesson: Lesson
    state: str
    confidence: float
    days_unseen: int = 0


def _day(text: str) -> date | None:
    try:
        return date.fromisoformat(text[:10])
    except ValueError:
        return None


def days_between(earlier: str, later: date) -> int:
    start = _day(earlier)
    return max((later - start).days, 0) if start is not None else 0


def faded(lesson: Lesson, rules: Rules, today: date) -> tuple[float, int]:
    """(confidence on ``today``, the decay steps taken since it was last seen)."""
    steps = (
        int(days_between(lesson.last_seen, today) // rules.decay_days)
        if rules.decay_days > 0
        else 0
    )
    return round(max(lesson.confidence - steps * rules.decay, 0.0), 4), steps


def standing(lesson: Lesson, rules: Rules, today: date) -> Standing:
    confidence, steps = faded(lesson, rules, today)
    days = days_between(lesson.last_seen, today)
    if lesson.status in ("approved", "rejected", "pending"):
        return Standing(lesson, lesson.status, confidence, days)
    if confidence >= rules.threshold - 1e-9:
        return Standing(lesson, "active", confidence, days)
    # the "deprecated" in a file is a mark of what this says, never an input to it: a
    # lesson stands on its numbers and the day
    if lesson.seen >= 2 or steps > 0:
        return Standing(lesson, "deprecated", confidence, days)
    return Standing(lesson, "new", confidence, days)


def ranked(standings: list[Standing]) -> list[Standing]:
    """Those the snapshot may show: approved first, then active; each by confidence,
    then the most recently seen, then id (so the order never depends on the disk's)."""
    shown = [s for s in standings if s.state in SHOWN]
    return sorted(
        shown,
        key=lambda s: (
            SHOWN.index(s.state),
            -s.confidence,
            s.days_unseen,
            s.lesson.id,
        ),
    )


# -- the file -----------------------------------------------------------------------------

_FIELDS = ("id", "kind", "text", "confidence", "seen", "first_seen", "last_seen", "status",
           "error", "files", "sessions", "articles", "decided_by")  # fmt: skip


def lesson_text(lesson: Lesson) -> str:
    """The file a lesson is stored as."""
    lines = ["---"]
    for name in _FIELDS:
        value = getattr(lesson, name)
        if name in ("error", "decided_by") and not value:
            continue
        if isinstance(value, tuple):
            value = list(value)
        lines.append(f"{name}: {json.dumps(value, ensure_ascii=False)}")
    lines.append("---")
    body = lesson.details.strip()
    return "\n".join(lines) + "\n" + (f"\n{body}\n" if body else "")


def parse_lesson(text: str) -> Lesson | None:
    """The lesson in a file's text, or None when it is not one (a person's stray file,
    a damaged one): the readers skip it rather than fail."""
    if not text.startswith("---\n"):
        return None
    head, sep, body = text[4:].partition("\n---\n")
    if not sep:
        head, sep, body = text[4:].partition("\n---")
        if not sep or body.strip():
            return None
    meta: dict[str, Any] = {}
    for line in head.splitlines():
        name, colon, value = line.partition(":")
        if not colon or name.strip() not in _FIELDS:
            continue
        try:
            meta[name.strip()] = json.loads(value.strip())
        except ValueError:
            meta[name.strip()] = value.strip()
    try:
        return Lesson(
            id=str(meta["id"]),
            kind=str(meta.get("kind") or "pitfall"),
            text=" ".join(str(meta.get("text") or "").split()),
            confidence=float(meta.get("confidence", 0.5)),
            seen=int(meta.get("seen", 1)),
            first_seen=str(meta.get("first_seen") or ""),
            last_seen=str(meta.get("last_seen") or ""),
            status=str(meta.get("status")) if meta.get("status") in STATUSES else "learned",
            error=str(meta.get("error") or ""),
            files=_strings(meta.get("files")),
            sessions=_strings(meta.get("sessions")),
            articles=_strings(meta.get("articles")),
            decided_by=str(meta.get("decided_by") or ""),
            details=body.strip(),
        )
    except (KeyError, TypeError, ValueError):
        return None


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def read_lessons(root: Path) -> list[Lesson]:
    """Every lesson of the knowledge base at ``root``, by id."""
    folder = root / LESSONS_DIR
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".md"))
    except OSError:
        return []
    found = []
    for name in names:
        try:
            text = (folder / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        lesson = parse_lesson(text)
        if lesson is not None and f"{lesson.id}.md" == name:
            found.append(lesson)
    return found


def write_lesson(root: Path, lesson: Lesson) -> None:
    """Store ``lesson`` atomically (a crash leaves the old file or the new, never half)."""
    folder = root / LESSONS_DIR
    folder.mkdir(exist_ok=True)
    path = folder / f"{lesson.id}.md"
    tmp = folder / f".{lesson.id}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(lesson_text(lesson))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def decided(lesson: Lesson, verdict: str, by: str) -> Lesson:
    """``lesson`` after a person's verdict (approved or rejected)."""
    return replace(lesson, status=verdict, decided_by=by)
