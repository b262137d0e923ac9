"""Learning lessons from a compile run's agent sessions (kb_ai/lessons.py holds what a
lesson is and how sure of it the knowledge base is).

Each session's extraction names pitfalls (error, cause, fix, the command or file),
conventions, and the rules the user stated (corrections, learned as conventions). Each
of those is a sighting. A sighting is the lesson it resembles, when one does:

- the same kind, and
- the same error (its text with numbers, hex ids and quotes set aside), or wording
  that shares at least half its words (Jaccard over the content words), or a shared
  command or file with a quarter of the words in common.

Otherwise it is a new lesson. A session counts once per lesson however often it shows
it (a session compiled again as it grows adds nothing), and sightings of one lesson in
one session are merged into it. A rejected lesson takes its sightings and stays
rejected: the same evidence never brings it back. After the run every lesson is looked
at again, so one that has faded below the threshold is marked deprecated in its file.

No model call: what a sighting is, and what it matches, is decided here, the same way
for the same input.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from compiler.extract import Extraction
from kb_ai.lessons import (
    KINDS,
    Lesson,
    Rules,
    Standing,
    decided,
    faded,
    lesson_text,
    read_lessons,
    standing,
    write_lesson,
)
from wiki.slugs import slugify

if TYPE_CHECKING:
    from compiler.state import Plan, Work
    from kb_ai.settings import Settings
    from wiki import KnowledgeBase

_WORD = re.compile(r"[^\W_]+")
# fmt: off
_STOP = frozenset({
    "the", "and", "for", "with", "that", "this", "from", "are", "was", "were", "not",
    "but", "you", "your", "has", "have", "had", "its", "into", "when", "then", "than",
    "them", "they", "use", "used", "using", "run", "ran", "can", "will", "all", "any",
    "one", "out", "via", "per", "should", "must", "always", "never", "don", "dont",
    "do", "does", "did", "fix", "fixed",
})
# fmt: on
# the normalised transcript's head (compiler/transcripts/_model.py: Transcript.to_text)
_STARTED = re.compile(r"^\*Transcript of [^\n]*?, started (\d{4}-\d{2}-\d{2})", re.M)
SAME_WORDS = 0.5
SAME_FILE_WORDS = 0.25


@dataclass(frozen=True)
class Sighting:
    """One lesson as one session shows it."""

    kind: str
    text: str
    error: str = ""
    files: tuple[str, ...] = ()
    details: str = ""


@dataclass(frozen=True)
class SessionLessons:
    """What one session of a run shows: its sightings, on the day it happened, fed into
    the articles ``homes`` (its pitfall and convention articles)."""

    session: str  # the session's raw path: one identity however it arrived
    day: date
    sightings: tuple[Sighting, ...]
    homes: tuple[str, ...] = ()


@dataclass
class Learned:
    """What a run did to the lessons, by id."""

    sightings: int = 0
    new: list[str] = field(default_factory=list)
    seen_again: list[str] = field(default_factory=list)
    merged: int = 0  # sightings taken as a lesson already known (or found earlier this run)
    deprecated: list[str] = field(default_factory=list)  # marked in this run
    written: list[str] = field(default_factory=list)  # lesson files changed


def sightings_of(ex: Extraction) -> list[Sighting]:
    """The lessons one session's extraction shows, in its order."""
    out = []
    for p in ex.pitfalls:
        fix = p.get("fix", "")
        text = p["error"] + (f" — fix: {fix}" if fix else "")
        details = [f"**Error:** {p['error']}"]
        details += [f"**Cause:** {p['cause']}"] if p.get("cause") else []
        details += [f"**Fix:** {fix}"] if fix else []
        where = p.get("command_or_file", "")
        details += [f"**Command or file:** `{where}`"] if where else []
        out.append(
            Sighting(
                "pitfall", _line(text), p["error"], (where,) if where else (), "\n\n".join(details)
            )
        )
    for c in ex.conventions:
        out.append(Sighting("convention", _line(c), details=c))
    for c in ex.corrections:  # a rule the user stated is how this team does things
        why = c.get("why", "")
        out.append(
            Sighting(
                "convention",
                _line(c["rule"]),
                details=c["rule"] + (f"\n\nWhy: {why}" if why else ""),
            )
        )
    return out


def _line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def session_day(text: str, default: date) -> date:
    """The day a session happened, when its transcript states it (``started ...`` in
    the normalised head), else ``default`` (the day it compiled)."""
    m = _STARTED.search(text[:2000])
    if m:
        try:
            return date.fromisoformat(m.group(1))
        except ValueError:
            pass
    return default


def words(text: str) -> frozenset[str]:
    """The content words of ``text``, case-folded, a plural's s dropped."""
    out = set()
    for w in _WORD.findall(text.casefold()):
        if len(w) < 3 or w in _STOP or w.isdigit():
            continue
        out.add(w[:-1] if len(w) > 4 and w.endswith("s") and not w.endswith("ss") else w)
    return frozenset(out)


def error_signature(error: str) -> str:
    """An error without what changes between two runs of it: numbers, hex ids, quotes."""
    text = re.sub(r"0x[0-9a-f]+|\b[0-9a-f]{7,}\b|\d+", "0", error.casefold())
    text = re.sub(r"[\"'`]", "", text)
    return " ".join(text.split())


def likeness(s: Sighting, lesson: Lesson) -> float:
    """How much ``s`` is ``lesson`` (0: not at all; 1 or more: surely the same)."""
    if s.kind != lesson.kind:
        return 0.0
    if s.error and lesson.error:
        sig = error_signature(s.error)
        if len(sig) >= 12 and sig == error_signature(lesson.error):
            return 2.0
    a, b = words(s.text), words(lesson.text)
    if not a or not b:
        return 0.0
    jaccard = len(a & b) / len(a | b)
    if jaccard >= SAME_WORDS:
        return jaccard
    if set(s.files) & set(lesson.files) and jaccard >= SAME_FILE_WORDS:
        return jaccard
    return 0.0


def best_match(s: Sighting, lessons: Iterable[Lesson]) -> Lesson | None:
    scored = [(likeness(s, lesson), lesson.id, lesson) for lesson in lessons]
    scored = [t for t in scored if t[0] > 0]
    if not scored:
        return None
    return min(scored, key=lambda t: (-t[0], t[1]))[2]


def lesson_id(s: Sighting, taken: set[str]) -> str:
    digest = hashlib.sha1(f"{s.kind}\n{' '.join(sorted(words(s.text)))}".encode()).hexdigest()
    base = f"{slugify(s.text, 50)}-{digest[:6]}"
    out, n = base, 2
    while out in taken:
        out, n = f"{base}-{n}", n + 1
    return out


def _union(old: Sequence[str], new: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys([*old, *(n for n in new if n)]))


def learn(
    root: Path,
    sessions: Sequence[SessionLessons],
    rules: Rules,
    *,
    today: date,
    review: bool = False,
) -> Learned:
    """Apply ``sessions`` (in order) to the lessons of the knowledge base at ``root``,
    then mark the ones faded by ``today``; writes only the files that changed."""
    before = {lesson.id: lesson for lesson in read_lessons(root)}
    lessons = dict(before)
    done = Learned()
    for session in sessions:
        counted: set[str] = set()  # lessons this session has already counted for
        for s in session.sightings:
            done.sightings += 1
            match = best_match(s, lessons.values())
            if match is None:
                new = Lesson(
                    id=lesson_id(s, set(lessons)),
                    kind=s.kind,
                    text=s.text,
                    confidence=rules.start,
                    seen=1,
                    first_seen=session.day.isoformat(),
                    last_seen=session.day.isoformat(),
                    status="pending" if review else "learned",
                    error=s.error,
                    files=s.files,
                    sessions=(session.session,),
                    articles=session.homes,
                    details=s.details,
                )
                lessons[new.id] = new
                done.new.append(new.id)
                counted.add(new.id)
                continue
            done.merged += 1
            lesson = replace(
                match,
                files=_union(match.files, s.files),
                articles=_union(match.articles, session.homes),
            )
            if session.session not in match.sessions and match.id not in counted:
                # what time took is gone, but a lesson seen again is never less sure
                # than one seen for the first time
                confidence = max(faded(match, rules, session.day)[0], rules.start)
                day = max(session.day.isoformat(), match.last_seen)
                lesson = replace(
                    lesson,
                    confidence=round(min(rules.top, confidence + rules.step), 4),
                    seen=match.seen + 1,
                    last_seen=day,
                    sessions=(*match.sessions, session.session),
                    status=match.status,  # deprecated or not: judged below, on today
                )
                if match.id not in done.new and match.id not in done.seen_again:
                    done.seen_again.append(match.id)
            counted.add(match.id)
            lessons[match.id] = lesson
    for lid, lesson in list(lessons.items()):  # the file says where it stands today
        if lesson.status not in ("learned", "deprecated"):
            continue  # a person's verdict, or one waiting for it
        fallen = standing(lesson, rules, today).state == "deprecated"
        if fallen and lesson.status == "learned":
            lessons[lid] = replace(lesson, status="deprecated")
            done.deprecated.append(lid)
        elif not fallen and lesson.status == "deprecated":
            lessons[lid] = replace(lesson, status="learned")
    for lid, lesson in lessons.items():
        old = before.get(lid)
        if old is None or lesson_text(old) != lesson_text(lesson):
            write_lesson(root, lesson)
            done.written.append(lesson.path)
    return done


def homes_of(paths: Iterable[str]) -> tuple[str, ...]:
    """The pitfall and convention articles among ``paths``: where a session's lessons live."""
    return tuple(p for p in paths if len(p.split("/")) == 3 and p.split("/")[1] in KINDS)


def learn_from_run(
    kb: KnowledgeBase,
    settings: Settings,
    work: Sequence[Work],
    plan: Plan,
    *,
    today: date | None = None,
) -> Learned:
    """The lessons of a compile run's sessions (``work`` in input order, ``plan`` the
    articles each fed), learned into the knowledge base's lessons/."""
    today = today or datetime.now(UTC).date()
    sessions = []
    for i, w in enumerate(work):
        if not w.usable or w.source.kind != "transcript":
            continue
        found = sightings_of(w.extraction)
        if found:
            day = session_day(w.source.text, today)
            homes = homes_of(plan.articles_of(i))
            sessions.append(SessionLessons(w.raw_path, day, tuple(found), homes))
    return learn(kb.root, sessions, Rules.of(settings), today=today, review=settings.learn_review)


def standings(
    kb: KnowledgeBase, settings: Settings, *, today: date | None = None
) -> list[Standing]:
    """Every lesson and where it stands ``today``: the snapshot's order first (approved,
    then active), then new, pending, deprecated and rejected ones, each surest first."""
    today = today or datetime.now(UTC).date()
    rules = Rules.of(settings)
    all_ = [standing(lesson, rules, today) for lesson in read_lessons(kb.root)]
    order = ("approved", "active", "new", "pending", "deprecated", "rejected")
    return sorted(
        all_, key=lambda s: (order.index(s.state), -s.confidence, s.days_unseen, s.lesson.id)
    )


def decide(
    kb: KnowledgeBase, lesson_ids: Sequence[str], verdict: str, by: str
) -> tuple[list[Lesson], str | None]:
    """A person's verdict (``approved`` or ``rejected``) on lessons, in one commit with
    the person as its author. Every id must be a lesson's: an unknown one is an error and
    nothing is changed. Returns the lessons as decided and the commit (None: no change)."""
    from kb_ai.errors import NotFoundError, UsageError
    from wiki.git import commit_paths
    from wiki.lock import compile_lock

    if verdict not in ("approved", "rejected"):
        raise UsageError(f"{verdict!r} is not a verdict", hint="approved or rejected")
    if not lesson_ids:
        raise UsageError("no lesson named", hint="kb-ai learned list shows their ids")
    with compile_lock(kb):  # a compile learning meanwhile waits
        lessons = {lesson.id: lesson for lesson in read_lessons(kb.root)}
        unknown = [i for i in lesson_ids if i not in lessons]
        if unknown:
            known = ", ".join(sorted(lessons)[:5]) or "none yet"
            raise NotFoundError(
                f"no lesson {', '.join(unknown)}",
                hint=f"kb-ai learned list shows the lessons (ids such as {known})",
            )
        out = []
        for lid in dict.fromkeys(lesson_ids):
            lesson = decided(lessons[lid], verdict, by)
            if lesson != lessons[lid]:
                write_lesson(kb.root, lesson)
            out.append(lesson)
        verb = "approve" if verdict == "approved" else "reject"
        subject = f"learned: {verb} {len(out)} lesson(s)"
        body = "\n".join(f"{verdict} {lesson.path}: {lesson.text}" for lesson in out)
        commit = commit_paths(kb, f"{subject}\n\n{body}", [lesson.path for lesson in out])
    return out, commit
