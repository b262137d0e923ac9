"""Documents in a real browser against a real `kb-ai serve`: a PDF dropped on Submit and
a URL pasted there both compile; the article's source shows its pages and the original."""

import os
import re
import shutil
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.fakes.kb_responder import respond
from tests.fakes.openai_server import FakeOpenAIServer
from tests.web.live import LiveServer, model_env
from wiki import KnowledgeBase

CHROMIUM = os.environ.get("KB_AI_CHROMIUM", "/usr/bin/chromium")
DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "documents"
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not shutil.which(CHROMIUM), reason=f"no chromium at {CHROMIUM}"),
    pytest.mark.skipif(not DATA.is_dir(), reason="shared/data/documents not present"),
]
sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect
PAGE = (
    b"<html><head><title>Incident review 12</title></head><body><nav>Home | Search</nav>"
    b"<article><h1>Incident review 12</h1><p>The certificate expired on a Sunday because the "
    b"renewal job had been disabled during the migration; renewals now alert two weeks "
    b"ahead.</p></article></body></html>"
)


class Site(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/incidents/12.html"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    kb = KnowledgeBase.init(tmp_path_factory.mktemp("browser-docs") / "kb")
    with FakeOpenAIServer(respond) as model:
        env = {**model_env(model.base_url, kb.root), "KB_AI_FETCH_ALLOW": "127.0.0.1"}
        command = [sys.executable, "-m", "kb_ai", "--kb", str(kb.root), "serve"]
        with LiveServer(env, command=[*command, "--host", "127.0.0.1"]) as live:
            yield live


def test_a_pdf_and_a_url_from_the_submit_page_compile_with_their_pages(server, site):
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        page = browser.new_page(base_url=server.url)
        errors = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto("/submit")
        expect(page.locator("#types")).to_contain_text("PowerPoint")
        pdf = (DATA / "REPAIR-2022-INV-001_multipage.pdf").read_bytes()
        page.locator("#files").set_input_files(
            [{"name": "estimate.pdf", "mimeType": "application/pdf", "buffer": pdf}]
        )
        page.get_by_role("button", name="Upload").click()
        expect(page.locator("#submit-result")).to_contain_text("Queued 1 document")
        page.get_by_label("URL of a page or a document").fill(site)
        page.get_by_role("button", name="Fetch and submit").click()
        expect(page.locator("#submit-result")).to_contain_text("Queued 1 document")

        page.goto("/status")
        rows = page.locator("#tasks tbody tr")
        expect(rows).to_have_count(2)
        for i in range(2):
            expect(rows.nth(i).locator(".pill")).to_have_text("done", timeout=30_000)

        # the PDF: its article cites pages, its source shows them and offers the original
        rows.filter(has_text="estimate.pdf").locator("a.made").first.click()
        page.locator("a[href^='/sources/raw/']").first.click()
        expect(page.locator("h6.marker#page-3")).to_have_text("page 3")
        expect(page.locator("#original")).to_have_attribute("href", re.compile(r"\.pdf$"))

        # the URL: main content only, and where it was fetched from
        page.goto("/status")
        rows.filter(has_text="12.html").locator("a.made").first.click()
        page.locator("a[href^='/sources/raw/']").first.click()
        expect(page.locator(".md")).to_contain_text("renewals now alert two weeks ahead")
        expect(page.locator(".md")).not_to_contain_text("Home | Search")
        expect(page.get_by_role("link", name=site)).to_be_visible()
        assert errors == [], errors
        browser.close()
