"""The chat page says what it is doing while the model works: a status line that names
the step (with a small model: how many sentences it chooses among) is shown before any
of the answer, and gives way to the answer when it comes."""

import json
import re
import threading

import pytest

from tests.fakes.kb_responder import respond, stage_of
from tests.fakes.openai_server import Reply
from tests.web.conftest import BROWSER, serving
from wiki import Article, KnowledgeBase, build_catalog, commit_all, write_article
from wiki.catalog import write_indexes

pytestmark = BROWSER
expect = pytest.importorskip("playwright.sync_api").expect

PAGE = "# Deploys\n\n" + " ".join(
    f"Deploy window {i} opens at {i + 8}:00 for the {team} team."
    for i, team in enumerate(["platform", "data", "billing", "search"], 1)
)
RELEASE = threading.Event()  # the stand-in model answers the pick only once this is set
PICKED: list[str] = []


def slow_picker(request):
    """The stand-in model: a small one that picks the first sentence offered, but only
    when the test lets it (the pick is where a small model spends its time)."""
    if stage_of(request) != "answer":
        return respond(request)
    offered = re.findall(r"^(s\d+) \(.*?\): (.+)$", request["messages"][-1]["content"], re.M)
    RELEASE.wait(60)
    PICKED.append(offered[0][1])
    return Reply(json.dumps({"sentences": [offered[0][0]]}))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    kb = KnowledgeBase.init(tmp_path_factory.mktemp("browser-progress") / "kb")
    write_article(kb, Article("wiki/howto/deploys.md", "Deploys", "howto",
                              "When each deploy window opens", ["deploy"], ["raw/none.md"],
                              "2026-01-01", "2026-01-01", PAGE))  # fmt: skip
    write_indexes(kb, build_catalog(kb))
    commit_all(kb, "Add the deploy windows")
    try:
        with serving(kb.root, slow_picker, KB_AI_SMALL_MODEL="1") as live:
            yield live
    finally:
        RELEASE.set()  # never leave the stand-in waiting


def test_a_status_line_shows_what_is_happening_before_the_answer(page):
    page.goto("/chat")
    page.get_by_label("Your question").fill("When does the deploy window for the data team open?")
    page.get_by_label("Your question").press("Enter")
    reply = page.locator(".msg.assistant").last
    expect(reply.locator(".stage")).to_have_text(
        re.compile(r"^Choosing among \d+ sentences of the pages read…$"), timeout=20_000
    )
    expect(reply.locator(".answer")).to_have_text("")  # nothing of the answer yet
    RELEASE.set()
    expect(reply.locator(".cites a")).to_have_text("Deploys", timeout=20_000)
    expect(reply.locator(".stage")).to_have_count(0)
    expect(reply.locator(".answer")).to_contain_text(PICKED[0])
