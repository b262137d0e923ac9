"""The web UI's Delete button on a source, and the Health page."""

from __future__ import annotations

import re

from tests.conftest import compile_notes
from tests.web.conftest import make_client
from wiki import list_articles, read_article, write_article

NOTES = {
    "cache.md": "# Cache\n\nWe chose Redis for the session cache. The TTL is 30 minutes.\n",
    "billing.md": "# Billing\n\nInvoices are sent on the first working day of each month.\n",
}
BILLING = "wiki/concept/billing.md"
SAME_ORIGIN = {"origin": "http://127.0.0.1"}


def form_token(html: str) -> dict[str, str]:
    """The page form's CSRF field, as a browser would send it back."""
    match = re.search(r'name="csrf" value="([^"]*)"', html)
    return {"csrf": match.group(1) if match else ""}


def test_the_delete_button_removes_a_source_and_its_lone_article(
    kb, fake_model, tmp_path, settings, model
):
    compile_notes(kb, NOTES, tmp_path)
    with make_client(settings, model) as client:
        page = client.get("/sources/raw/billing.md")
        assert 'action="/remove/raw/billing.md"' in page.text
        token = form_token(page.text)
        refused = client.post(
            "/remove/raw/billing.md", data=token, headers={"origin": "http://evil.example"}
        )
        assert refused.status_code == 403 and BILLING in list_articles(kb)
        done = client.post(
            "/remove/raw/billing.md", data=token, headers=SAME_ORIGIN, follow_redirects=False
        )
        assert done.status_code == 303 and "removed=raw/billing.md" in done.headers["location"]
        assert BILLING not in list_articles(kb)
        assert not (kb.root / "raw" / "billing.md").exists()
        missing = client.post("/remove/raw/nothing.md", data=token, headers=SAME_ORIGIN)
        assert missing.status_code in (400, 404)


def test_the_health_page_lists_what_lint_finds(kb, fake_model, tmp_path, settings, model):
    compile_notes(kb, NOTES, tmp_path)
    article = read_article(kb, "wiki/decision/cache.md")
    article.body += "\nSee [[no-such-page|the old plan]].\n"
    write_article(kb, article)
    with make_client(settings, model) as client:
        page = client.get("/health")
    assert page.status_code == 200
    assert (
        'data-check="dead-wikilink"' in page.text and "[[no-such-page|the old plan]]" in page.text
    )


def test_the_review_page_approves_only_same_origin_posts(kb, fake_model, tmp_path, settings, model):
    from click.testing import CliRunner

    from kb_ai.cli import main

    note = tmp_path / "cache.md"
    note.write_text(NOTES["cache.md"])
    held = CliRunner().invoke(main, ["--kb", str(kb.root), "compile", "--review", str(note)])
    assert held.exit_code == 0, held.output
    with make_client(settings, model) as client:
        page = client.get("/review")
        assert page.status_code == 200 and "TTL is 30 minutes" in page.text
        run = page.text.split('data-run="', 1)[1].split('"', 1)[0]
        token = form_token(page.text)
        refused = client.post(
            f"/review/{run}/approve", data=token, headers={"origin": "http://evil.example"}
        )
        assert refused.status_code == 403 and "wiki/decision/cache.md" not in list_articles(kb)
        done = client.post(
            f"/review/{run}/approve", data=token, headers=SAME_ORIGIN, follow_redirects=False
        )
        assert done.status_code == 303 and "wiki/decision/cache.md" in list_articles(kb)
        again = client.post(f"/review/{run}/approve", data=token, headers=SAME_ORIGIN)
        assert again.status_code == 400  # approved already


def test_rejecting_a_run_of_a_web_submission_keeps_the_submission_for_a_retry(kb, model):
    """A submission whose run is rejected is not lost: Status shows it failed with the
    reason and a Retry, and Retry compiles it again (held for review once more)."""
    from kb_ai.settings import load_settings
    from tests.web.conftest import NOTE, wait_for

    settings = load_settings(kb.root, {"model": "fake/model", "review": True}, environ={})
    with make_client(settings, model) as client:
        task = client.post("/api/submit", json=NOTE).json()["tasks"][0]
        assert wait_for(client, task["id"])["state"] == "done"
        page = client.get("/review")
        assert "Backups of the main database run nightly" in page.text
        run = page.text.split('data-run="', 1)[1].split('"', 1)[0]
        done = client.post(f"/review/{run}/reject", data=form_token(page.text), headers=SAME_ORIGIN)
        assert done.status_code == 200 and f"Run {run} rejected" in done.text
        assert '1 submitted document waits on <a href="/status">Status</a>' in done.text
        assert list_articles(kb) == []
        rejected = client.get(f"/api/tasks/{task['id']}").json()["task"]
        assert rejected["state"] == "failed" and "rejected in review" in rejected["error"]
        status = client.get("/status")
        assert f'action="/status/{task["id"]}/retry"' in status.text
        retried = client.post(
            f"/status/{task['id']}/retry", data=form_token(status.text), headers=SAME_ORIGIN
        )
        assert retried.status_code == 200
        assert wait_for(client, task["id"])["state"] == "done"
        again = client.get("/review")
        assert "Backups of the main database run nightly" in again.text
        second = again.text.split('data-run="', 1)[1].split('"', 1)[0]
        assert second != run
        approved = client.post(
            f"/review/{second}/approve", data=form_token(again.text), headers=SAME_ORIGIN
        )
        assert approved.status_code == 200 and len(list_articles(kb)) == 1
        # approved: the submitted copy kept for a retry goes, as for any compiled task
        assert not (kb.state_dir / "inbox" / f"{task['id']}.txt").exists()


def test_rejecting_a_run_from_the_cli_says_which_submissions_wait_for_a_retry(kb, model):
    from click.testing import CliRunner

    from kb_ai.cli import main
    from kb_ai.settings import load_settings
    from tests.web.conftest import NOTE, wait_for

    settings = load_settings(kb.root, {"model": "fake/model", "review": True}, environ={})
    with make_client(settings, model) as client:
        task = client.post("/api/submit", json=NOTE).json()["tasks"][0]
        assert wait_for(client, task["id"])["state"] == "done"
        run = client.get("/review").text.split('data-run="', 1)[1].split('"', 1)[0]
        out = CliRunner().invoke(main, ["--kb", str(kb.root), "review", "reject", run])
        assert out.exit_code == 0, out.output
        assert f"Nightly backups ({task['id']})" in out.output and "Retry" in out.output
        assert client.get(f"/api/tasks/{task['id']}").json()["task"]["state"] == "failed"


def test_a_source_is_deleted_as_the_admin_who_did_it_and_audited(
    kb, fake_model, tmp_path, settings, model
):
    """Only an admin may delete a source; the commit has them as author, the audit log
    says who, what and from where. `kb-ai rm` at the terminal is in the log too."""
    from click.testing import CliRunner

    from kb_ai.cli import main
    from kb_ai.service import open_kb, people
    from wiki import git

    compile_notes(kb, NOTES, tmp_path)
    okb = open_kb(settings=settings)
    _, admin = people.add(okb, "Ada Admin", "admin", "ada@example.org")
    _, contributor = people.add(okb, "Cora Contributor", "contributor")
    with make_client(settings, model) as client:
        token = form_token(client.get(f"/sources/raw/billing.md?token={admin}").text)
        client.cookies.clear()
        as_cora = {**SAME_ORIGIN, "authorization": f"Bearer {contributor}"}
        refused = client.post("/remove/raw/billing.md", data=token, headers=as_cora)
        assert refused.status_code == 403 and BILLING in list_articles(kb)
        as_ada = {**SAME_ORIGIN, "authorization": f"Bearer {admin}"}
        done = client.post(
            "/remove/raw/billing.md", data=token, headers=as_ada, follow_redirects=False
        )
        assert done.status_code == 303 and BILLING not in list_articles(kb)
    assert git(kb, "log", "-1", "--format=%an|%ae|%cn").strip() == (
        "Ada Admin|ada@example.org|kb-ai"
    )
    cli = CliRunner().invoke(main, ["--kb", str(kb.root), "rm", "raw/cache.md"])
    assert cli.exit_code == 0, cli.output
    removals = [(e.who, e.target, e.address) for e in people.entries(okb) if e.action == "remove"]
    assert removals[0] == ("Ada Admin", "raw/billing.md", "testclient")
    assert len(removals) == 2 and removals[1][1:] == ("raw/cache.md", "cli")
