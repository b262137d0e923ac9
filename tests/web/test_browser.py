"""The four pages in a real browser (Debian's chromium through Playwright) against a real
`kb-ai serve` and the fake model server: submit a note, watch it compile on Status, open
the article, ask a question and see the streamed answer with a citation link."""

import re

import httpx
import pytest

from tests.fakes.kb_responder import respond
from tests.web.conftest import BROWSER, html_site, serving
from wiki import KnowledgeBase

pytestmark = BROWSER
expect = pytest.importorskip("playwright.sync_api").expect


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    kb = KnowledgeBase.init(tmp_path_factory.mktemp("browser") / "kb")
    with serving(kb.root, respond) as live:
        yield live


def test_submit_watch_read_and_ask(page):
    page.goto("/wiki")
    expect(page.get_by_text("This knowledge base is empty")).to_be_visible()

    page.get_by_role("link", name="Submit", exact=True).click()
    page.get_by_label("Title").fill("Nightly backups")
    page.get_by_label("Text (Markdown welcome)").fill(
        "# Nightly backups\n\nBackups of the main database run nightly at 02:00. "
        "Backup copies are kept for thirty days in a separate account.\n"
    )
    page.get_by_role("button", name="Submit text").click()
    expect(page.locator("#submit-result")).to_contain_text("Queued 1 document")

    page.get_by_role("link", name="Watch it on Status").click()
    expect(page.locator("#live")).to_have_text("live")
    row = page.locator("#tasks tbody tr").first
    expect(row).to_contain_text("Nightly backups")
    expect(row.locator(".pill")).to_have_text("done", timeout=20_000)  # pushed over SSE

    row.get_by_role("link", name="wiki/concept/nightly-backups.md").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Nightly backups")
    expect(page.locator(".md")).to_contain_text("nightly at 02:00")
    expect(page.locator(".history li")).to_have_count(1)

    page.get_by_role("link", name="Chat", exact=True).click()
    page.get_by_label("Your question").fill("How long are nightly backups kept?")
    page.get_by_label("Your question").press("Enter")
    answer = page.locator(".msg.assistant").last
    expect(answer.locator(".cites a")).to_have_text("Nightly backups", timeout=20_000)
    # under it, the citation-faithfulness check of the answer
    expect(answer.locator(".checked")).to_have_text(
        "Cited claims: 1 of 1 supported by the lines they cite."
    )
    expect(page).to_have_url(re.compile(r"/chat/[0-9a-f]+$"))
    current = page.locator("#sessions a[aria-current='page']")  # listed without a reload
    expect(current).to_have_text("How long are nightly backups kept?")
    link = answer.locator(".answer a").first
    # the citation names the lines that hold the claim; the article page marks them
    cited = re.compile(r"^/wiki/concept/nightly-backups\.md#L\d+(-L\d+)?$")
    expect(link).to_have_attribute("href", cited)
    link.click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Nightly backups")
    marked = page.locator(".md .cited")
    expect(marked).to_have_count(1)
    expect(marked).to_contain_text("nightly at 02:00")
    expect(marked).to_be_in_viewport()

    page.go_back()  # the saved session shows the conversation again
    expect(page.locator(".msg.user")).to_have_text("How long are nightly backups kept?")
    expect(page.locator("#sessions a")).to_have_count(1)

    page.get_by_role("link", name="+ New chat").click()
    page.get_by_label("Your question").fill("When do the nightly backups run?")
    page.get_by_label("Your question").press("Enter")
    expect(page.locator("#sessions a")).to_have_count(2)
    expect(page.locator("#sessions a").first).to_have_text("When do the nightly backups run?")
    expect(page.locator("#sessions a[aria-current='page']")).to_have_count(1)


def test_drop_files_and_keyboard_navigation(page):
    page.goto("/submit")
    page.locator("#files").set_input_files(
        [
            {
                "name": "on-call.md",
                "mimeType": "text/markdown",
                "buffer": b"# On call\n\nThe rota changes on Mondays.\n",
            },
            {"name": "logo.png", "mimeType": "image/png", "buffer": b"\x89PNG\r\n\x1a\n\x00\x00"},
        ]
    )
    expect(page.locator("#chosen li")).to_have_count(2)
    page.get_by_role("button", name="Upload").click()
    result = page.locator("#submit-result")
    expect(result).to_contain_text("Queued 1 document")
    expect(result).to_contain_text("logo.png: looks like a binary file")

    page.goto("/wiki")
    page.keyboard.press("Tab")  # the first stop is the skip link, then the navigation
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Wiki", exact=True)).to_be_focused()
    page.set_viewport_size({"width": 390, "height": 800})  # a phone: nothing wider than it
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390


@pytest.fixture
def attacker(server):
    """Another site: one page whose form posts a note into the kb-ai server."""
    target = server.url
    body = (
        "<!doctype html><title>Win a prize</title>"
        f'<form id="f" method="post" action="{target}/api/submit" enctype="multipart/form-data">'
        '<input name="title" value="Planted"><textarea name="content">Planted by another'
        " site.</textarea><button>Claim</button></form>"
        f'<iframe sandbox="allow-forms allow-scripts" srcdoc="<form method=post '
        f"action={target}/submit enctype=multipart/form-data><input name=title "
        "value=Sandboxed><textarea name=content>Sandboxed plant.</textarea>"
        '<button>Go</button></form>"></iframe>'
    ).encode()
    with html_site(body, "/") as url:
        yield url


def test_a_page_on_another_site_cannot_write_into_the_wiki(page, server, attacker):
    page.goto(attacker)
    with page.expect_response(lambda r: r.url == f"{server.url}/api/submit") as answer:
        page.get_by_role("button", name="Claim").click()
    assert answer.value.status == 403
    page.goto(attacker)  # a sandboxed frame: the browser sends "Origin: null"
    with page.expect_response(lambda r: r.url == f"{server.url}/submit") as answer:
        page.frame_locator("iframe").get_by_role("button", name="Go").click()
    assert answer.value.request.header_value("origin") == "null"
    assert answer.value.status == 403
    titles = [t["title"] for t in httpx.get(f"{server.url}/api/tasks").json()["tasks"]]
    assert "Planted" not in titles and "Sandboxed" not in titles


def test_status_buttons_work_from_our_own_page(page, server):
    note = {"title": "Delete me", "content": "# Delete me\n\nA note to delete from Status.\n"}
    task = httpx.post(f"{server.url}/api/submit", json=note).json()["tasks"][0]
    page.goto("/status")
    row = page.locator(f"#tasks tr[data-id='{task['id']}']")
    expect(row.locator(".pill")).to_have_text("done", timeout=20_000)
    row.get_by_role("button", name="Delete").click()
    expect(row).to_have_count(0)
    assert httpx.get(f"{server.url}/api/tasks/{task['id']}").status_code == 404
