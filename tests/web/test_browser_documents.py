"""Documents in a real browser against a real `kb-ai serve`: a PDF dropped on Submit and
a URL pasted there both compile; the article's source shows its pages and the original."""

import re

import pytest

from tests.conftest import needs_shared_data, shared_data
from tests.fakes.kb_responder import respond
from tests.web.conftest import BROWSER, html_site, serving
from wiki import KnowledgeBase

DATA = shared_data("documents")
pytestmark = [
    *BROWSER,
    needs_shared_data("documents"),
]
expect = pytest.importorskip("playwright.sync_api").expect
PAGE = (
    b"<html><head><title>Incident review 12</title></head><body><nav>Home | Search</nav>"
    b"<article><h1>Incident review 12</h1><p>The certificate expired on a Sunday because the "
    b"renewal job had been disabled during the migration; renewals now alert two weeks "
    b"ahead.</p></article></body></html>"
)


@pytest.fixture(scope="module")
def site():
    with html_site(PAGE, "/incidents/12.html") as url:
        yield url


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    kb = KnowledgeBase.init(tmp_path_factory.mktemp("browser-docs") / "kb")
    with serving(kb.root, respond, KB_AI_FETCH_ALLOW="127.0.0.1") as live:
        yield live


def test_a_pdf_and_a_url_from_the_submit_page_compile_with_their_pages(page, site):
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
