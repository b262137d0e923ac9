"""What counts as the same lesson, and how confidence moves: compiler/lessons.py over a
knowledge base's lessons/ folder, on days of the test's choosing."""

from __future__ import annotations

from datetime import date, timedelta

from compiler.lessons import SessionLessons, Sighting, learn
from kb_ai.hooks.snapshot import build_snapshot
from kb_ai.lessons import Rules, read_lessons, standing
from wiki import KnowledgeBase

RULES = Rules.defaults()
DAY = date(2026, 3, 2)


def pitfall(error, fix, where=""):
    return Sighting("pitfall", f"{error} — fix: {fix}", error, (where,) if where else ())


def convention(text):
    return Sighting("convention", text)


def teach(root, *sessions, today=None, review=False):
    """Each session (name, day, sightings) learned in order; returns what was learned."""
    made = [SessionLessons(f"raw/{n}.md", d, tuple(s)) for n, d, s in sessions]
    last = max(d for _, d, _ in sessions) if sessions else DAY
    return learn(root, made, RULES, today=today or last, review=review)


def by_text(root, words):
    found = [lesson for lesson in read_lessons(root) if words in lesson.text]
    assert len(found) == 1, [lesson.text for lesson in read_lessons(root)]
    return found[0]


def test_the_same_error_with_other_numbers_is_one_lesson(tmp_path):
    teach(
        tmp_path,
        ("a", DAY, [pitfall("ConnectionRefusedError: [Errno 111] port 5432", "started postgres")]),
        ("b", DAY + timedelta(days=1),
         [pitfall("ConnectionRefusedError: [Errno 111] port 5433", "ran pg_ctl start")]),
    )  # fmt: skip
    lesson = by_text(tmp_path, "ConnectionRefusedError")
    assert (lesson.seen, lesson.confidence, lesson.last_seen) == (2, 0.55, "2026-03-03")
    assert lesson.sessions == ("raw/a.md", "raw/b.md")


def test_a_shared_file_needs_some_shared_words_and_kinds_never_mix(tmp_path):
    done = teach(
        tmp_path,
        (
            "a",
            DAY,
            [
                pitfall(
                    "ruff fails on the import order in compiler/run.py",
                    "ran ruff --fix",
                    "compiler/run.py",
                )
            ],
        ),  # fmt: skip
        ("b", DAY, [pitfall("ruff reports unsorted imports", "ran ruff --fix", "compiler/run.py")]),
        (
            "c",
            DAY,
            [pitfall("mypy: incompatible return type", "fixed the annotation", "compiler/run.py")],
        ),  # fmt: skip
        ("d", DAY, [convention("ruff fails on the import order in compiler/run.py")]),
    )
    assert len(done.new) == 3 and done.merged == 1  # a and b; c is another error; d another kind
    assert by_text(tmp_path, "ran ruff --fix").seen == 2


def test_a_session_counts_once_and_confidence_stops_at_the_top(tmp_path):
    rule = "Run the migrations with alembic before the tests"
    sessions = [(f"s{i}", DAY + timedelta(days=i), [convention(rule), convention(rule + ".")])
                for i in range(12)]  # fmt: skip
    done = teach(tmp_path, *sessions)
    lesson = by_text(tmp_path, "alembic")
    assert lesson.seen == 12 and lesson.confidence == 0.9  # 0.5 + 11 x 0.05, held at 0.9
    assert len(done.new) == 1 and done.sightings == 24
    teach(tmp_path, ("s3", DAY + timedelta(days=20), [convention(rule)]))  # compiled again
    assert by_text(tmp_path, "alembic").seen == 12


def test_an_unseen_lesson_fades_is_marked_deprecated_never_deleted_and_comes_back(tmp_path):
    kb = KnowledgeBase.init(tmp_path / "kb")
    tmp_path = kb.root
    rule = "Deploys go out from main through the deploy workflow"
    teach(tmp_path, ("a", DAY, [convention(rule)]), ("b", DAY, [convention(rule)]))
    lesson = by_text(tmp_path, "deploy workflow")
    assert standing(lesson, RULES, DAY).state == "active"
    assert standing(lesson, RULES, DAY + timedelta(days=29)).confidence == 0.55
    assert standing(lesson, RULES, DAY + timedelta(days=30)).confidence == 0.5
    # the snapshot judges on the day it is built
    assert "deploy workflow" in build_snapshot(kb.root, today=DAY)
    assert "deploy workflow" not in build_snapshot(kb.root, today=DAY + timedelta(days=31))
    # a later run (of any session) marks it in its file; the file stays
    done = teach(tmp_path, ("c", DAY + timedelta(days=40), [convention("Use uv for venvs")]))
    faded = by_text(tmp_path, "deploy workflow")
    assert done.deprecated == [faded.id] and faded.status == "deprecated"
    assert (tmp_path / faded.path).is_file()
    # seen again, it is back: from its faded confidence, one step up
    teach(tmp_path, ("d", DAY + timedelta(days=41), [convention(rule)]))
    back = by_text(tmp_path, "deploy workflow")
    assert (back.status, back.confidence, back.seen) == ("learned", 0.55, 3)
    # after a year unseen all it had is gone; seen again it is as sure as a lesson seen twice
    teach(tmp_path, ("e", DAY + timedelta(days=420), [convention(rule)]))
    assert by_text(tmp_path, "deploy workflow").confidence == 0.55


def test_a_lesson_seen_once_that_fades_is_deprecated_not_new(tmp_path):
    teach(tmp_path, ("a", DAY, [convention("Tag releases as vYYYY.MM")]))
    lesson = by_text(tmp_path, "Tag releases")
    assert standing(lesson, RULES, DAY).state == "new"
    assert standing(lesson, RULES, DAY + timedelta(days=30)).state == "deprecated"


def test_a_damaged_lesson_file_is_skipped_not_fatal(tmp_path):
    teach(tmp_path, ("a", DAY, [convention("Keep modules under 500 lines")]))
    (tmp_path / "lessons" / "broken.md").write_bytes(b"\xff\xfe not a lesson")
    (tmp_path / "lessons" / "stray.md").write_text("---\nid: [unclosed\n")
    assert [lesson.text for lesson in read_lessons(tmp_path)] == ["Keep modules under 500 lines"]
    teach(tmp_path, ("b", DAY, [convention("Keep modules under 500 lines, split them")]))
    assert by_text(tmp_path, "500 lines").seen == 2


def test_an_article_that_holds_lessons_is_left_to_them_in_the_snapshot(tmp_path):
    from compiler.lessons import decide
    from wiki import Article, build_catalog, write_article, write_indexes

    kb = KnowledgeBase.init(tmp_path / "kb")
    home = "wiki/pitfall/stale-lockfile.md"
    write_article(kb, Article(home, "Stale lockfile", "pitfall", "uv.lock out of date.", [], [],
                              "2026-03-01", "2026-03-01", "uv.lock out of date.\n"))  # fmt: skip
    write_indexes(kb, build_catalog(kb))
    seen = pitfall("error: the lockfile needs to be updated", "ran uv lock", "uv.lock")
    made = [SessionLessons("raw/a.md", DAY, (seen,), (home,))]
    learn(kb.root, made, RULES, today=DAY)
    once = build_snapshot(kb.root, today=DAY).splitlines()
    assert (
        once[0] == "- pitfall: Stale lockfile — uv.lock out of date."
    )  # a new lesson: its article
    learn(kb.root, [SessionLessons("raw/b.md", DAY, (seen,), (home,))], RULES, today=DAY)
    twice = build_snapshot(kb.root, today=DAY).splitlines()
    assert twice[0].startswith(
        "- pitfall (confidence 0.55, seen in 2 sessions): error: the lockfile"
    )
    assert not any("Stale lockfile" in line for line in twice)  # not said twice
    (lesson,) = read_lessons(kb.root)
    decide(kb, [lesson.id], "rejected", "Ada")
    gone = build_snapshot(kb.root, today=DAY)
    assert "lockfile" not in gone.lower() and gone == ""  # nothing else to show
