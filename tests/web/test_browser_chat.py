"""Chat in a real browser with long answers: the input box never hides the end of an
answer, and a question sent twice in a hurry makes one chat session, listed once."""

import re

import pytest

from tests.fakes.kb_responder import respond, stage_of
from tests.fakes.openai_server import Reply
from tests.web.conftest import BROWSER, serving
from wiki import Article, KnowledgeBase, build_catalog, commit_all, write_article
from wiki.catalog import write_indexes

pytestmark = BROWSER
expect = pytest.importorskip("playwright.sync_api").expect

STEPS = [f"Release step {i} is signed off by the {w} team." for i, w in enumerate(
    ["platform", "security", "data", "mobile", "web", "billing", "search", "support"] * 5, 1
)]  # fmt: skip
PAGE = "# Release checklist\n\n" + "\n\n".join(STEPS) + "\n"


def long_answers(request):
    """The fake model, except that it answers with every sentence of the page it read,
    one paragraph each (all of them grounded in the page), slowly."""
    if stage_of(request) != "answer":
        return respond(request)
    user = request["messages"][-1]["content"]
    found = re.search(r'<page title="(.*?)" path="(.*?)">\n(.*?)\n</page>', user, re.S)
    if found is None:
        return Reply("The wiki does not cover this question.")
    title, path, text = found.groups()
    lines = [line for line in text.splitlines() if line.startswith("Release step")]
    return Reply("\n\n".join(f"{line} [{title}]({path})" for line in lines), delay=0.5)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    kb = KnowledgeBase.init(tmp_path_factory.mktemp("browser-chat") / "kb")
    write_article(kb, Article("wiki/howto/release-checklist.md", "Release checklist", "howto",
                              "Who signs off each release step", ["release"], ["raw/none.md"],
                              "2026-01-01", "2026-01-01", PAGE))  # fmt: skip
    write_indexes(kb, build_catalog(kb))
    commit_all(kb, "Add the release checklist")
    with serving(kb.root, long_answers) as live:
        yield live


@pytest.fixture
def viewport():
    return {"width": 900, "height": 600}  # short: a long answer runs past the input box


def test_the_end_of_a_long_answer_is_visible_above_the_input_box(page):
    page.goto("/chat")
    page.get_by_label("Your question").fill("Who signs off each release step?")
    page.get_by_label("Your question").press("Enter")
    answer = page.locator(".msg.assistant").last
    expect(answer.locator(".cites a")).to_have_text("Release checklist", timeout=20_000)
    last = answer.locator(".answer p").filter(has_text="Release step 40 ")
    expect(last).to_be_in_viewport()
    line = last.bounding_box()
    box = page.locator("#ask-form").bounding_box()
    assert line["y"] + line["height"] <= box["y"], (line, box)


def test_a_question_sent_twice_in_a_hurry_makes_one_session_listed_once(page):
    page.goto("/chat")
    question = page.get_by_label("Your question")
    question.fill("Which team signs off release step 3?")
    question.press("Enter")
    question.fill("Which team signs off release step 3?")
    question.press("Enter")  # while the first is still being answered
    expect(page.locator(".msg.assistant .cites a").first).to_be_visible(timeout=20_000)
    expect(page).to_have_url(re.compile(r"/chat/[0-9a-f]+$"))
    current = page.url.rsplit("/", 1)[1]
    expect(page.locator(f"#sessions a[href='/chat/{current}']")).to_have_count(1)
    expect(page.locator("#sessions a[aria-current='page']")).to_have_count(1)
    page.reload()
    titled = page.locator("#sessions a", has_text="Which team signs off release step 3?")
    expect(titled).to_have_count(1)  # one chat, not one per Enter
    expect(page.locator(f"#sessions a[href='/chat/{current}']")).to_have_count(1)
