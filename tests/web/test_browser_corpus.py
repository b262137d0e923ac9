"""The chat page's corpus choice in a real browser (`kb-ai serve` in a subprocess, the
stand-in model over HTTP): a question asked of a corpus is answered from its articles
only, a synthesis citing each record; the whole wiki stays the default."""

import pytest

from tests.fakes.kb_responder import respond
from tests.web.conftest import BROWSER, serving
from tests.web.worker_corpus import worker_corpus_kb

pytestmark = BROWSER
expect = pytest.importorskip("playwright.sync_api").expect


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    kb = worker_corpus_kb(tmp_path_factory.mktemp("browser-corpus") / "kb")
    with serving(kb.root, respond) as live:
        yield live


def ask(page, question):
    box = page.get_by_label("Your question")
    box.fill(question)
    box.press("Enter")
    return page.locator(".msg.assistant").last


def test_a_question_to_a_corpus_is_answered_from_it_citing_each_record(page):
    page.goto("/chat")
    choice = page.get_by_label("Answer from")
    expect(choice).to_have_value("")  # the whole wiki unless a corpus is chosen
    choice.select_option("worker")
    answer = ask(page, "What recurs in the worker decisions?")
    expect(answer.locator(".cites a")).to_have_text(["Worker leases", "Worker retries"],
                                                    timeout=20_000)  # fmt: skip
    expect(answer.locator(".note")).to_contain_text("Answered from corpus worker")
    expect(answer.locator(".answer")).not_to_contain_text("Backups")


def test_the_corpus_keeps_other_articles_out_and_the_whole_wiki_has_them(page):
    page.goto("/chat")
    page.get_by_label("Answer from").select_option("worker")
    inside = ask(page, "How long are nightly backups kept?")
    expect(inside.locator(".answer")).to_contain_text("does not cover", timeout=20_000)
    expect(inside.locator(".cites")).to_have_count(0)
    # the answer finished (its words come before its end): one question at a time, so a
    # second one asked while it streams stays in the box
    expect(inside).not_to_have_attribute("aria-busy", "true", timeout=20_000)
    page.get_by_label("Answer from").select_option("")
    whole = ask(page, "How long are nightly backups kept?")
    expect(whole.locator(".cites a")).to_have_text(["Nightly backups"], timeout=20_000)


def test_an_unknown_corpus_is_refused_with_the_list(page, server):
    page.goto("/chat")
    reply = page.evaluate(
        """async () => {
            const r = await apiFetch("/api/ask", {method: "POST",
              headers: {"Content-Type": "application/json"},
              body: JSON.stringify({question: "Why?", corpus: "nope"})});
            return {status: r.status, body: await r.json()};
        }"""
    )
    assert reply["status"] == 404
    assert "No corpus 'nope'" in reply["body"]["error"] and "worker" in reply["body"]["error"]
