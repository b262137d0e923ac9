"""The wiki page's graph of the links between articles: drawn by the server as SVG
(one node a link to each article, one line each link), clicked through in a browser."""

import re

import pytest

from tests.fakes.kb_responder import respond
from tests.web.conftest import BROWSER, serving
from wiki import Article, KnowledgeBase, build_catalog, commit_all, write_article
from wiki.catalog import write_indexes

expect = pytest.importorskip("playwright.sync_api").expect

PAGES = [
    ("wiki/concept/spool.md", "Hook spool", "The hook appends to the [[worker|worker]]'s spool."),
    ("wiki/concept/worker.md", "Worker", "The worker drains the spool; see [queue](queue.md)."),
    ("wiki/concept/queue.md", "Task queue", "Tasks wait here."),
    ("wiki/howto/alone.md", "Lonely page", "Nothing links here, and it links nowhere."),
]


def write_pages(kb):
    for path, title, body in PAGES:
        kind = path.split("/")[1]
        write_article(kb, Article(path, title, kind, body, [], ["raw/none.md"],
                                  "2026-01-01", "2026-01-01", f"# {title}\n\n{body}\n"))  # fmt: skip
    write_indexes(kb, build_catalog(kb))
    commit_all(kb, "Add four linked articles")


def test_the_wiki_page_draws_each_article_and_each_link(client, kb):
    assert "link-graph" not in client.get("/wiki").text  # no article yet: no graph
    write_pages(kb)
    html = client.get("/wiki").text
    svg = html[html.index("<svg") : html.index("</svg>")]
    for path, title, _ in PAGES:
        assert f'<a href="/{path}" class="node' in svg and f">{title}</text>" in svg
    lines = re.findall(r"<line [^>]*><title>(.*?)</title>", svg)
    assert sorted(lines) == ["Hook spool → Worker", "Worker → Task queue"]
    assert "Links between articles (2)" in html


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    kb = KnowledgeBase.init(tmp_path_factory.mktemp("browser-graph") / "kb")
    write_pages(kb)
    with serving(kb.root, respond) as live:
        yield live


@BROWSER[0]
@BROWSER[1]
def test_a_person_clicks_through_the_graph(page):
    page.goto("/wiki")
    page.locator(".link-graph a.node", has_text="Worker").click()
    expect(page).to_have_url(re.compile(r"/wiki/concept/worker\.md$"))
    expect(page.locator("h1").first).to_contain_text("Worker")
    page.go_back()
    page.locator(".link-graph a.node", has_text="Task queue").click()
    expect(page).to_have_url(re.compile(r"/wiki/concept/queue\.md$"))
