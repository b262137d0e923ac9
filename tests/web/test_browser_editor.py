"""The editor in a real browser (Debian's chromium through Playwright) against a real
`kb-ai serve`: an article is edited, previewed and saved, and its history names the
editor and shows the line added."""

import os
import subprocess
import sys

import pytest

from tests.fakes.kb_responder import respond
from tests.fakes.openai_server import FakeOpenAIServer
from tests.web.conftest import BROWSER, serving, watched_page
from tests.web.live import ROOT, model_env
from wiki import KnowledgeBase, git, list_articles, read_article

pytestmark = BROWSER
expect = pytest.importorskip("playwright.sync_api").expect


def test_an_article_is_edited_and_saved_in_the_browser(tmp_path, browser):
    kb = KnowledgeBase.init(tmp_path / "kb")
    note = tmp_path / "backups.md"
    note.write_text("# Nightly backups\n\nBackups run nightly at 02:00 and are kept 30 days.\n")
    with FakeOpenAIServer(respond) as model:
        env = {**os.environ, **model_env(model.base_url, kb.root)}
        done = subprocess.run(
            [sys.executable, "-m", "kb_ai", "compile", str(note)],
            env=env, cwd=ROOT, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert done.returncode == 0, done
    (path,) = list_articles(kb)
    mine = "A restore drill runs on the first Monday of each month."
    with (
        serving(kb.root, respond, KB_AI_WEB_EDITOR="Priya Raman") as live,
        watched_page(browser, live.url) as page,
    ):
        page.goto("/" + path)
        page.get_by_role("link", name="Edit", exact=True).click()
        box = page.get_by_label("Article (Markdown)")
        box.fill(box.input_value().rstrip("\n") + f"\n\n{mine}\n")
        page.get_by_role("button", name="Preview").click()
        expect(page.get_by_role("region", name="Preview")).to_contain_text(mine)
        page.get_by_label("What you changed").fill("Add the restore drill")
        page.get_by_role("button", name="Save").click()

        expect(page.locator("h1")).to_have_text("Nightly backups")
        history = page.locator("section.history")
        expect(history.locator("li").first).to_contain_text("Priya Raman")
        expect(history.locator("li").first).to_contain_text("Add the restore drill")
        expect(page.locator("pre.diff")).to_contain_text(f"+{mine}")
    assert mine in read_article(kb, path).body.splitlines()
    assert git(kb, "log", "-1", "--format=%an").strip() == "Priya Raman"
