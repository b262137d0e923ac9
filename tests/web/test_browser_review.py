"""The Review page in a real browser (Debian's chromium through Playwright) against a
real `kb-ai serve`: a run held for review is shown with its diff and approved, and its
article appears in the wiki only then."""

import os
import subprocess
import sys

import pytest

from tests.fakes.kb_responder import respond
from tests.fakes.openai_server import FakeOpenAIServer
from tests.web.conftest import BROWSER, serving, watched_page
from tests.web.live import ROOT, model_env
from wiki import KnowledgeBase

pytestmark = BROWSER
expect = pytest.importorskip("playwright.sync_api").expect


def test_a_held_run_is_approved_on_the_review_page(tmp_path, browser):
    kb = KnowledgeBase.init(tmp_path / "kb")
    note = tmp_path / "backups.md"
    note.write_text("# Nightly backups\n\nBackups run nightly at 02:00 and are kept 30 days.\n")
    with FakeOpenAIServer(respond) as model:  # a process of its own: the browser runs a loop
        env = {**os.environ, **model_env(model.base_url, kb.root)}
        held = subprocess.run(
            [sys.executable, "-m", "kb_ai", "compile", "--review", str(note)],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert held.returncode == 0 and "Held for review" in held.stdout + held.stderr, held
    with serving(kb.root, respond) as live, watched_page(browser, live.url) as page:
        page.goto("/wiki")
        expect(page.get_by_text("Nightly backups")).to_have_count(0)  # not on main yet

        page.get_by_role("link", name="Review", exact=True).click()
        run = page.locator("article.review")
        expect(run).to_have_count(1)
        expect(run.locator("pre.diff")).to_contain_text("kept 30 days")
        run.get_by_role("button", name="Approve", exact=True).click()
        expect(page.get_by_role("status")).to_contain_text("approved")
        expect(page.locator("article.review")).to_have_count(0)

        page.get_by_role("link", name="Wiki", exact=True).click()
        page.get_by_role("link", name="Nightly backups").first.click()
        expect(page.locator("main")).to_contain_text("02:00")
