"""People in a real browser (Debian's chromium through Playwright) against a real
`kb-ai serve`: a contributor signs in and uploads a file, Status says who submitted it
and who started its run; the run waits for a reviewer (review_policy = "contributors"),
who approves it with a comment on the Review page; a reader signs in and sees no
Submit, Edit or Delete; the audit log (and `kb-ai audit`) has the sign-ins, the upload
and the approval. The same server's MCP `ask` tool answers an agent with the reader's
token and refuses one with none."""

from concurrent.futures import ThreadPoolExecutor

import pytest
from click.testing import CliRunner
from mcp.shared.exceptions import MCPError

from kb_ai.cli import main
from kb_ai.service import open_kb, people
from tests.fakes.kb_responder import respond
from tests.kb_ai.test_mcp import asking, over_http
from tests.web.conftest import BROWSER, serving, watched_page
from wiki import KnowledgeBase

pytestmark = BROWSER
expect = pytest.importorskip("playwright.sync_api").expect


def sign_in(page, token):
    page.goto("/login")
    page.get_by_label("Your token").fill(token)
    page.get_by_role("button", name="Sign in").click()


def test_a_contributor_submits_a_reviewer_approves_and_a_reader_only_reads(tmp_path, browser):
    kb = KnowledgeBase.init(tmp_path / "kb")
    kb.config_path.write_text(kb.config_path.read_text() + 'review_policy = "contributors"\n')
    okb = open_kb(kb.root, detect=False)
    with serving(kb.root, respond) as live:
        # added to the running server (it waits for /healthz, which then needs a token)
        _, cora = people.add(okb, "Cora Contributor", "contributor")
        _, rex = people.add(okb, "Rex Reviewer", "reviewer")
        _, rita = people.add(okb, "Rita Reader", "reader")
        with watched_page(browser, live.url) as page:
            page.goto("/wiki")
            expect(page.get_by_role("heading", level=1)).to_have_text("401")
            sign_in(page, cora)
            expect(page.locator("header .who")).to_have_text("Cora Contributor (contributor)")
            page.get_by_role("link", name="Submit", exact=True).click()
            note = b"# Nightly backups\n\nBackups run nightly at 02:00 and are kept 30 days.\n"
            page.locator("#files").set_input_files(
                [{"name": "backups.md", "mimeType": "text/markdown", "buffer": note}]
            )
            page.get_by_role("button", name="Upload").click()
            expect(page.locator("#submit-result")).to_contain_text("Queued 1 document")
            page.get_by_role("link", name="Watch it on Status").click()
            row = page.locator("#tasks tbody tr").first
            expect(row.locator(".pill")).to_have_text("done", timeout=30_000)
            expect(row).to_contain_text("backups.md")
            expect(row).to_contain_text("by Cora Contributor")
            run = page.locator("#runs tbody tr").first  # the compile run of the upload
            expect(run).to_contain_text("Cora Contributor (web)")
            page.goto("/wiki")
            expect(page.get_by_role("link", name="Nightly backups")).to_have_count(0)  # held

        with watched_page(browser, live.url) as page:
            sign_in(page, rex)
            page.get_by_role("link", name="Review", exact=True).click()
            run = page.locator("article.review")
            expect(run).to_have_count(1)
            expect(run.locator(".submitted-by")).to_have_text("submitted by Cora Contributor")
            expect(run.locator("pre.diff").first).to_contain_text("kept 30 days")
            decision = run.locator("form.run-decision")
            decision.get_by_label("Comment on the run").fill("Matches the backup runbook")
            decision.get_by_role("button", name="Approve").click()
            expect(page.get_by_role("status")).to_contain_text("approved")
            expect(page.locator("article.review")).to_have_count(0)

        with watched_page(browser, live.url) as page:
            sign_in(page, rita)
            expect(page.locator("header .who")).to_have_text("Rita Reader (reader)")
            page.goto("/status")
            expect(page.locator("#tasks tbody tr")).to_have_count(1)
            expect(page.locator("#tasks tbody tr").first).to_contain_text("by Cora Contributor")
            expect(page.get_by_role("link", name="Submit", exact=True)).to_have_count(0)
            expect(page.get_by_role("button", name="Delete")).to_have_count(0)
            page.goto("/wiki")
            page.get_by_role("link", name="Nightly backups").first.click()
            expect(page.locator("main")).to_contain_text("02:00")  # approved: on main now
            expect(page.get_by_role("link", name="Edit", exact=True)).to_have_count(0)

        # an agent with the reader's token asks over MCP; one without a token is refused
        # (in a thread of its own: Playwright's loop runs on this one)
        with ThreadPoolExecutor(1) as thread:
            question = asking("How long are nightly backups kept?")
            answered = thread.submit(over_http, live.url, question, token=rita).result()
            statuses = []
            refused = thread.submit(over_http, live.url, question, None, statuses)
            with pytest.raises(ExceptionGroup) as caught:
                refused.result()
        assert not answered.is_error and "[Nightly backups](" in answered.content[0].text
        assert caught.group_contains(MCPError) and set(statuses) == {401}

    actions = [(e.who, e.action) for e in people.entries(okb)]
    for expected in [
        ("Cora Contributor", "sign-in"),
        ("Cora Contributor", "submit"),
        ("Rex Reviewer", "sign-in"),
        ("Rex Reviewer", "approve"),
        ("Rita Reader", "sign-in"),
    ]:
        assert expected in actions
    audit = CliRunner().invoke(main, ["--kb", str(kb.root), "audit"])
    assert audit.exit_code == 0, audit.output
    assert "Rex Reviewer  approve run" in audit.output
    assert "(Matches the backup runbook)" in audit.output
    assert "Cora Contributor  submit" in audit.output
