"""The Review page in a real browser (Debian's chromium through Playwright) against a
real `kb-ai serve`: a run held for review is shown with its diff and approved, and its
article appears in the wiki only then."""

import os
import shutil
import sys

import pytest
from click.testing import CliRunner

from kb_ai.cli import main
from tests.fakes.kb_responder import respond
from tests.fakes.openai_server import FakeOpenAIServer
from tests.web.live import LiveServer, model_env
from wiki import KnowledgeBase

CHROMIUM = os.environ.get("KB_AI_CHROMIUM", "/usr/bin/chromium")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not shutil.which(CHROMIUM), reason=f"no chromium at {CHROMIUM} (apt-get install chromium)"
    ),
]
sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect


def test_a_held_run_is_approved_on_the_review_page(tmp_path):
    kb = KnowledgeBase.init(tmp_path / "kb")
    note = tmp_path / "backups.md"
    note.write_text("# Nightly backups\n\nBackups run nightly at 02:00 and are kept 30 days.\n")
    with FakeOpenAIServer(respond) as model:
        env = model_env(model.base_url, kb.root)
        held = CliRunner().invoke(main, ["compile", "--review", str(note)], env=env)
        assert held.exit_code == 0 and "Held for review" in held.output, held.output
        command = [
            sys.executable,
            "-m",
            "kb_ai",
            "--kb",
            str(kb.root),
            "serve",
            "--host",
            "127.0.0.1",
        ]
        with (
            LiveServer(env, command=command) as live,
            sync_api.sync_playwright() as p,
        ):
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True)
            page = browser.new_page(base_url=live.url)
            errors = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto("/wiki")
            expect(page.get_by_text("Nightly backups")).to_have_count(0)  # not on main yet

            page.get_by_role("link", name="Review", exact=True).click()
            run = page.locator("article.review")
            expect(run).to_have_count(1)
            expect(run.locator("pre.diff")).to_contain_text("kept 30 days")
            run.get_by_role("button", name="Approve").click()
            expect(page.get_by_role("status")).to_contain_text("approved")
            expect(page.locator("article.review")).to_have_count(0)

            page.get_by_role("link", name="Wiki", exact=True).click()
            page.get_by_role("link", name="Nightly backups").first.click()
            expect(page.locator("main")).to_contain_text("02:00")
            browser.close()
            assert errors == [], errors
