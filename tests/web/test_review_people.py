"""The Review page for a team: a contributor's submission waits (review_policy), the page
says who submitted it and why it waits, a reviewer approves one article with a comment
(audited with their address), and the submitter cannot decide on their own run."""

from __future__ import annotations

import re

from kb_ai.service import open_kb, people
from kb_ai.settings import load_settings
from tests.web.conftest import make_client, wait_for
from tests.web.test_upkeep import SAME_ORIGIN, form_token
from wiki import KnowledgeBase, git, list_articles

NOTE = {"title": "Nightly backups", "content": "# Nightly backups\n\nBackups run at 02:00.\n"}


def bearer(token):
    return {"authorization": f"Bearer {token}"}


def held_run(client, token):
    task = client.post("/api/submit", json=NOTE, headers=bearer(token)).json()["tasks"][0]
    client.headers.update(bearer(token))
    try:
        done = wait_for(client, task["id"])
    finally:
        del client.headers["authorization"]
    assert done["state"] == "done" and done["result"]["review"], done
    return done["result"]["review"].removeprefix("review/")


def test_a_reviewer_approves_a_contributors_article_with_a_comment(kb, model):
    kb.config_path.write_text(kb.config_path.read_text() + 'review_policy = "contributors"\n')
    settings = load_settings(kb.root, {"model": "fake/model"}, environ={})
    okb = open_kb(settings=settings)
    _, cora = people.add(okb, "Cora Contributor", "contributor")
    _, rex = people.add(okb, "Rex Reviewer", "reviewer")
    with make_client(settings, model) as client:
        run = held_run(client, cora)
        assert list_articles(kb) == []  # nothing reaches the wiki before a reviewer
        page = client.get("/review", headers=bearer(rex))
        assert "submitted by Cora Contributor" in page.text
        assert "Cora Contributor is a contributor" in page.text
        (path,) = [p for p in page.text.split('data-path="')[1:2]]
        path = path.split('"', 1)[0]
        assert path.startswith("wiki/") and "Approve article" in page.text

        as_cora = client.get("/review", headers=bearer(cora))
        assert "Approve" not in as_cora.text  # a contributor sees no decision to make

        form = form_token(page.text) | {"article": path, "comment": "Checked with ops"}
        done = client.post(
            f"/review/{run}/approve", data=form, headers=SAME_ORIGIN | bearer(rex),
            follow_redirects=False,
        )  # fmt: skip
        assert done.status_code == 303, done.text
        shown = client.get(done.headers["location"], headers=bearer(rex))
        assert f"Approved {path} of run {run}" in shown.text
    kb = KnowledgeBase.open(kb.root)
    assert path in list_articles(kb)
    assert git(kb, "log", "-1", "--format=%an|%B").startswith(
        f"Rex Reviewer|review: approved {path} of run {run}\n\nChecked with ops"
    )
    (entry,) = [e for e in people.entries(okb) if e.action == "approve"]
    assert (entry.who, entry.target, entry.detail, entry.address) == (
        "Rex Reviewer", f"run {run}: {path}", "Checked with ops", "testclient"
    )  # fmt: skip


def test_a_reviewer_cannot_approve_their_own_run_from_the_page(kb, model):
    kb.config_path.write_text(kb.config_path.read_text() + 'review_policy = "all"\n')
    settings = load_settings(kb.root, {"model": "fake/model"}, environ={})
    _, rex = people.add(open_kb(settings=settings), "Rex Reviewer", "reviewer")
    with make_client(settings, model) as client:
        run = held_run(client, rex)
        page = client.get("/review", headers=bearer(rex))
        assert "You submitted this run" in page.text and "Approve article" not in page.text
        csrf = re.search(r'name="kb-ai-csrf" content="([^"]+)"', page.text).group(1)
        refused = client.post(
            f"/review/{run}/approve", data={"csrf": csrf}, headers=SAME_ORIGIN | bearer(rex)
        )
        assert refused.status_code == 403 and "another reviewer" in refused.text
    assert list_articles(kb) == []
