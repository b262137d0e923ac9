"""People in a real browser (Debian's chromium through Playwright) against a real
`kb-ai serve`: a contributor signs in and submits, Status says who; a reader signs in
and sees no Submit, Retry or Delete; the audit log has both sign-ins and the submission."""

import pytest

from kb_ai.service import open_kb, people
from tests.fakes.kb_responder import respond
from tests.web.conftest import BROWSER, serving, watched_page
from wiki import KnowledgeBase

pytestmark = BROWSER
expect = pytest.importorskip("playwright.sync_api").expect


def sign_in(page, token):
    page.goto("/login")
    page.get_by_label("Your token").fill(token)
    page.get_by_role("button", name="Sign in").click()


def test_a_contributor_submits_and_a_reader_only_reads(tmp_path, browser):
    kb = KnowledgeBase.init(tmp_path / "kb")
    okb = open_kb(kb.root, detect=False)
    with serving(kb.root, respond) as live:
        # added to the running server (it waits for /healthz, which then needs a token)
        _, cora = people.add(okb, "Cora Contributor", "contributor")
        _, rita = people.add(okb, "Rita Reader", "reader")
        with watched_page(browser, live.url) as page:
            page.goto("/wiki")
            expect(page.get_by_role("heading", level=1)).to_have_text("401")
            sign_in(page, cora)
            expect(page.locator("header .who")).to_have_text("Cora Contributor (contributor)")
            page.get_by_role("link", name="Submit", exact=True).click()
            page.get_by_label("Title").fill("Nightly backups")
            page.get_by_label("Text (Markdown welcome)").fill(
                "# Nightly backups\n\nBackups run nightly at 02:00 and are kept 30 days.\n"
            )
            page.get_by_role("button", name="Submit text").click()
            expect(page.locator("#submit-result")).to_contain_text("Queued 1 document")
            page.get_by_role("link", name="Watch it on Status").click()
            row = page.locator("#tasks tbody tr").first
            expect(row.locator(".pill")).to_have_text("done", timeout=30_000)
            expect(row).to_contain_text("by Cora Contributor")

        with watched_page(browser, live.url) as page:
            sign_in(page, rita)
            expect(page.locator("header .who")).to_have_text("Rita Reader (reader)")
            page.goto("/status")
            expect(page.locator("#tasks tbody tr")).to_have_count(1)
            expect(page.locator("#tasks tbody tr").first).to_contain_text("by Cora Contributor")
            expect(page.get_by_role("link", name="Submit", exact=True)).to_have_count(0)
            expect(page.get_by_role("button", name="Delete")).to_have_count(0)

    actions = [(e.who, e.action) for e in people.entries(okb)]
    assert ("Cora Contributor", "sign-in") in actions
    assert ("Cora Contributor", "submit") in actions
    assert ("Rita Reader", "sign-in") in actions
