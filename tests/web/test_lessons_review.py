"""The Review page's lessons: listed with their confidence, approved or rejected by a
reviewer (a reader may look, not decide), the verdict one commit by that person."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from compiler.lessons import SessionLessons, Sighting, learn
from kb_ai.lessons import Rules, read_lessons
from kb_ai.service import open_kb, people
from tests.web.conftest import LOOPBACK, make_client
from wiki import git

SAME_ORIGIN = {"origin": LOOPBACK}


def bearer(token):
    return {"authorization": f"Bearer {token}"}


def test_a_reviewer_approves_a_lesson_on_the_review_page_a_reader_cannot(kb, settings, model):
    today = datetime.now(UTC).date()
    rule = Sighting("convention", "Run the linter before every commit")
    learn(kb.root, [SessionLessons(f"raw/s{i}.md", today, (rule,)) for i in range(2)],
          Rules.defaults(), today=today)  # fmt: skip
    (lesson,) = read_lessons(kb.root)
    okb = open_kb(settings=settings)
    reader = people.add(okb, "Rita Reader", "reader", None)[1]
    reviewer = people.add(okb, "Rex Reviewer", "reviewer", None)[1]
    with make_client(settings, model, start_worker=False) as client:
        page = client.get("/review", headers=bearer(reader))
        assert page.status_code == 200
        row = re.search(
            rf'<tr data-lesson="{lesson.id}" data-state="(\w+)">(.*?)</tr>', page.text, re.S
        )
        assert row and row.group(1) == "active" and "0.55" in row.group(2)
        assert "Run the linter before every commit" in row.group(2)
        assert f"/learned/{lesson.id}/approve" not in page.text  # a reader sees no buttons
        token = re.search(r'<meta name="kb-ai-csrf" content="([^"]+)">', page.text).group(1)
        refused = client.post(f"/learned/{lesson.id}/approve", data={"csrf": token},
                              headers={**SAME_ORIGIN, **bearer(reader)})  # fmt: skip
        assert refused.status_code == 403 and read_lessons(kb.root)[0].status == "learned"

        mine = client.get("/review", headers=bearer(reviewer))
        token = re.search(r'<meta name="kb-ai-csrf" content="([^"]+)">', mine.text).group(1)
        assert f"/learned/{lesson.id}/approve" in mine.text
        done = client.post(f"/learned/{lesson.id}/approve", data={"csrf": token},
                           headers={**SAME_ORIGIN, **bearer(reviewer)}, follow_redirects=False)  # fmt: skip
        assert done.status_code == 303 and "verdict=approved" in done.headers["location"]
        (after,) = read_lessons(kb.root)
        assert after.status == "approved" and after.decided_by == "Rex Reviewer"
        assert git(kb, "log", "-1", "--format=%an").strip() == "Rex Reviewer"
        shown = client.get("/review", headers=bearer(reviewer)).text
        assert f'data-lesson="{lesson.id}" data-state="approved"' in shown

        unknown = client.post("/learned/no-such-lesson/reject", data={"csrf": token},
                              headers={**SAME_ORIGIN, **bearer(reviewer)})  # fmt: skip
        assert unknown.status_code == 404 and "no lesson no-such-lesson" in unknown.text
