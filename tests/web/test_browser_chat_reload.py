"""A chat reopened in a real browser (reloaded, or chosen again from the side list)
shows each earlier answer as it was shown live: the note above it, the answer with its
links to the cited lines, its sources and its "Cited claims" line."""

import re

import pytest

from tests.fakes.kb_responder import respond
from tests.web.conftest import BROWSER, serving
from tests.web.worker_corpus import ARTICLES, articles_kb, worker_corpus_kb

pytestmark = BROWSER
expect = pytest.importorskip("playwright.sync_api").expect

# Each part of every answer on the page, as the reader sees it: its blocks in order
# (class and text) and where each of its links goes.
SHOWN = """() => [...document.querySelectorAll(".msg.assistant")].map((item) => ({
    blocks: [...item.children].map((c) => [c.className, c.innerText.trim()]),
    links: [...item.querySelectorAll("a")].map((a) => a.getAttribute("href")),
}))"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    kb = worker_corpus_kb(tmp_path_factory.mktemp("browser-reload") / "kb")
    with serving(kb.root, respond) as live:
        yield live


def ask(page, question, corpus=""):
    """The answer to ``question``, once it is done (a locator that stays on it)."""
    asked = page.locator(".msg.assistant").count()
    page.get_by_label("Answer from").select_option(corpus)
    box = page.get_by_label("Your question")
    box.fill(question)
    box.press("Enter")
    answer = page.locator(".msg.assistant").nth(asked)
    expect(answer).not_to_have_attribute("aria-busy", "true", timeout=20_000)
    return answer


def test_a_reloaded_chat_shows_each_earlier_answer_as_it_was_shown_live(page):
    page.goto("/chat")
    backups = ask(page, "How long are nightly backups kept?")
    expect(backups.locator(".answer a")).to_have_attribute(
        "href",
        re.compile(r"^/wiki/concept/nightly-backups\.md#L\d+"),  # the cited lines
    )
    corpus = ask(page, "What recurs in the worker decisions?", "worker")
    expect(corpus.locator(".note")).to_contain_text("Answered from corpus worker")
    expect(corpus.locator(".cites a")).to_have_text(["Worker leases", "Worker retries"])
    for answer in (backups, corpus):
        expect(answer.locator(".checked")).to_have_text(re.compile(r"^Cited claims: \d+ of \d+"))
    declined = ask(page, "How long is the office carpet kept?")
    expect(declined.locator(".answer")).to_contain_text("See also (nearby pages, not an answer)")
    expect(declined.locator(".checked, .cites")).to_have_count(0)  # nothing cited
    live = page.evaluate(SHOWN)
    assert [[b[0] for b in a["blocks"]] for a in live] == [
        ["md answer", "cites", "checked"],
        ["note", "md answer", "cites", "checked"],
        ["md answer"],
    ]
    sid = page.url.rsplit("/", 1)[1]

    page.reload()
    expect(page.locator(".msg.assistant")).to_have_count(3)
    assert page.evaluate(SHOWN) == live

    page.goto("/chat")  # a new chat, then the earlier one chosen from the side list
    page.locator(f"#sessions a[href='/chat/{sid}']").click()
    expect(page).to_have_url(re.compile(f"/chat/{sid}$"))
    expect(page.locator(".msg.assistant")).to_have_count(3)
    assert page.evaluate(SHOWN) == live


def test_a_failed_answer_is_shown_after_a_reload_as_it_was_shown_live(browser, tmp_path):
    """The model sends garbage for the answer: live, the answer is marked failed with
    the error; reloaded, the question is still there and so is that failure (no answer
    text, no sources, no "Cited claims" line)."""
    from tests.fakes.faulty_server import FaultyModel
    from tests.web.conftest import watched_page

    kb = articles_kb(tmp_path / "kb", ARTICLES[2:])  # the backups article alone
    with (
        serving(kb.root, FaultyModel("bad_envelope", stages={"answer"})) as live,
        watched_page(browser, live.url) as page,
    ):
        page.goto("/chat")
        box = page.get_by_label("Your question")
        box.fill("How long are nightly backups kept?")
        box.press("Enter")
        failed = page.locator(".msg.assistant")
        expect(failed).not_to_have_attribute("aria-busy", "true", timeout=20_000)
        expect(failed).to_have_class(re.compile(r"\bfailed\b"))
        expect(failed.locator(".error")).to_have_text(re.compile(r"^No answer: \S"))
        shown = page.evaluate(SHOWN)
        assert [[b[0] for b in a["blocks"]] for a in shown] == [["error"]]
        page.reload()
        expect(page.locator(".msg.user")).to_have_text(["How long are nightly backups kept?"])
        expect(page.locator(".msg.assistant.failed")).to_have_count(1)
        assert page.evaluate(SHOWN) == shown
