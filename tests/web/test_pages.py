"""The server-rendered pages, including what a submitted document can and cannot do."""

from wiki import Article, commit_all, write_article

EVIL = """# Evil

<script>alert("xss")</script> <img src=x onerror=alert(1)>

[click](javascript:alert(1)) and [[Nightly backups]] and [[Nowhere]]

| Key | Value |
|-----|-------|
| retention | thirty days |
"""


def test_a_new_kb_shows_clear_empty_states(client):
    for path, words in (
        ("/wiki", "This knowledge base is empty"),
        ("/status", "Nothing in the queue"),
        ("/chat", "Nothing to ask yet"),
        ("/submit", "Drop files here"),
    ):
        r = client.get(path)
        assert r.status_code == 200 and words in r.text, path
    assert client.get("/", follow_redirects=False).headers["location"] == "/wiki"


def test_the_submit_form_works_without_javascript(client):
    r = client.post("/submit", data={"title": "Backups", "content": "Backups run at 02:00."},
                    follow_redirects=False)  # fmt: skip
    assert r.status_code == 303 and r.headers["location"].startswith("/status?queued=1")
    r = client.post("/submit", data={"title": "Empty", "content": " "})
    assert r.status_code == 400 and "Nothing to submit" in r.text


def test_an_article_page_is_rendered_safely_with_links_sources_and_history(compiled, kb):
    write_article(kb, Article("wiki/concept/evil.md", "Evil", "concept", "s", [], ["raw/none.md"],
                              "2026-01-01", "2026-01-01", EVIL))  # fmt: skip
    commit_all(kb, "Add evil")
    page = compiled.get("/wiki/concept/evil.md").text
    assert "<script>alert" not in page and "&lt;script&gt;" in page
    assert "<img" not in page and 'href="javascript' not in page
    assert '<a class="wikilink" href="/wiki/concept/nightly-backups.md">Nightly backups</a>' in page
    assert 'class="wikilink missing"' in page
    assert "<table>" in page and "<td>thirty days</td>" in page
    assert "Add evil" in page  # history
    sha = compiled.get("/api/history?path=wiki/concept/evil.md").json()["history"][0]["sha"]
    diff = compiled.get(f"/wiki/concept/evil.md?sha={sha}").text
    assert 'class="add"' in diff and "&lt;script&gt;" in diff


def test_article_page_lists_sources_and_opens_them(compiled):
    page = compiled.get("/wiki/concept/nightly-backups.md").text
    assert "Backups of the main database" in page
    link = page.split('href="/sources/', 1)[1].split('"', 1)[0]
    source = compiled.get(f"/sources/{link}")
    assert source.status_code == 200 and "Nightly backups" in source.text


def test_missing_and_escaping_pages_say_so(compiled):
    r = compiled.get("/wiki/concept/none.md", headers={"accept": "text/html"})
    assert r.status_code == 404 and "no article" in r.text
    r = compiled.get("/wiki/..%2F..%2Fkb-ai.toml", headers={"accept": "text/html"})
    assert r.status_code in (400, 404) and "model" not in r.text


def test_status_and_chat_pages_show_tasks_and_sessions(compiled):
    assert "Nightly backups" in compiled.get("/status").text
    sid = compiled.post("/api/sessions", json={"title": "Backups"}).json()["session"]["id"]
    page = compiled.get(f"/chat/{sid}").text
    assert "Backups" in page and "Rename" in page
    r = compiled.post(f"/chat/{sid}/rename", data={"title": "Retention"}, follow_redirects=False)
    assert r.status_code == 303
    assert compiled.get(f"/api/sessions/{sid}").json()["session"]["title"] == "Retention"
    compiled.post(f"/chat/{sid}/delete", follow_redirects=False)
    assert compiled.get(f"/chat/{sid}", headers={"accept": "text/html"}).status_code == 404


def test_the_chat_page_says_when_the_tiny_embedded_model_answers(kb, settings):
    from dataclasses import replace

    from starlette.testclient import TestClient

    from tests.web.conftest import LOOPBACK
    from web.app import create_app

    tiny = replace(settings, model="local/default")
    with TestClient(create_app(tiny, start_worker=False), base_url=LOOPBACK) as client:
        assert "small embedded model" in client.get("/chat").text
        assert "small embedded model" not in client.get("/wiki").text
    with TestClient(create_app(settings, start_worker=False), base_url=LOOPBACK) as client:
        assert "small embedded model" not in client.get("/chat").text
