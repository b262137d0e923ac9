"""The server-rendered pages, including what a submitted document can and cannot do."""

from tests.web.conftest import csrf_token, sse, wait_for
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
    token = csrf_token(client)
    r = client.post("/submit", data={"title": "Backups", "content": "Backups run at 02:00.",
                                     "csrf": token}, follow_redirects=False)  # fmt: skip
    assert r.status_code == 303 and r.headers["location"].startswith("/status?queued=1")
    r = client.post("/submit", data={"title": "Empty", "content": " ", "csrf": token})
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
    assert "<table data-lines=" in page and "<td>thirty days</td>" in page
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


def test_article_page_cites_the_hand_edits_it_was_written_with(compiled, kb):
    write_article(kb, Article("wiki/concept/cited.md", "Cited", "concept", "s", [], ["raw/none.md"],
                              "2026-01-01", "2026-01-01", "Ask Ann first.\n",
                              edits=["a1b2c3d by Ann Example"]))  # fmt: skip
    commit_all(kb, "Add cited")
    page = compiled.get("/wiki/concept/cited.md").text
    sources = page.split('class="sources"', 1)[1].split("</section>", 1)[0]
    assert "Hand edit a1b2c3d by Ann Example" in sources
    assert 'href="?sha=a1b2c3d#diff"' in sources


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
    token = csrf_token(compiled)
    r = compiled.post(f"/chat/{sid}/rename", data={"title": "Retention", "csrf": token},
                      follow_redirects=False)  # fmt: skip
    assert r.status_code == 303
    assert compiled.get(f"/api/sessions/{sid}").json()["session"]["title"] == "Retention"
    compiled.post(f"/chat/{sid}/delete", data={"csrf": token}, follow_redirects=False)
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


def test_summaries_show_code_and_emphasis_not_raw_backticks_or_html(client, kb):
    summary = "Run `pg_dump` *nightly*; <b>never</b> [here](javascript:alert(1))"
    write_article(kb, Article("wiki/howto/dumps.md", "Dumps", "howto", summary, [],
                              ["raw/none.md"], "2026-01-01", "2026-01-01", "# Dumps\n\nText.\n"))  # fmt: skip
    commit_all(kb, "Add dumps")
    for page in (client.get("/wiki").text, client.get("/wiki/howto/dumps.md").text):
        assert "<code>pg_dump</code>" in page and "<em>nightly</em>" in page
        assert "`pg_dump`" not in page
        assert "<b>never</b>" not in page and 'href="javascript' not in page


def test_the_browser_gets_an_icon(client):
    r = client.get("/favicon.ico")
    assert r.status_code == 200 and r.headers["content-type"].startswith("image/svg+xml")
    assert 'rel="icon"' in client.get("/wiki").text


def test_a_symlinked_or_unreadable_article_is_skipped_not_fatal(compiled, kb, tmp_path):
    """One bad file in wiki/ used to fail /wiki, /chat and every compile; a link leading
    out of wiki/ must never be read."""
    outside = tmp_path / "outside.md"
    outside.write_text("---\ntitle: Outside secret\n---\n\nroot:x:0:0:root\n")
    concept = kb.root / "wiki" / "concept"
    (concept / "leak.md").symlink_to(outside)
    (concept / "alias.md").symlink_to(concept / "nightly-backups.md")
    (concept / "broken.md").write_bytes(b"---\ntitle: [unclosed\n---\n\n\xff\xfe")
    (kb.root / "wiki" / "elsewhere").symlink_to(tmp_path)  # a whole type folder, linked out
    for page in ("/wiki", "/chat"):
        r = compiled.get(page)
        assert r.status_code == 200 and "Outside secret" not in r.text, page
    tree = compiled.get("/api/wiki").json()
    assert [a["path"] for t in tree["types"] for a in t["articles"]] == [
        "wiki/concept/nightly-backups.md"
    ]
    note = {"title": "On call", "content": "# On call\n\nThe rota changes every Monday.\n"}
    task = compiled.post("/api/submit", json=note).json()["tasks"][0]
    done = wait_for(compiled, task["id"])
    assert done["state"] == "done", done["error"]
    with compiled.stream("POST", "/api/ask", json={"question": "When are backups run?"}) as r:
        events = dict(sse(r))
    assert "done" in events and "root:x" not in events["done"]["answer"]


BIDI = "Invoice\u202egnp.exe\x00\u2066x\u2069"


def test_nul_and_bidi_controls_in_titles_never_reach_the_html(client, kb):
    client.post("/api/submit", json={"title": BIDI, "content": "Invoices are paid on the 5th."})
    sid = client.post("/api/sessions", json={"title": BIDI}).json()["session"]["id"]
    concept = kb.root / "wiki" / "concept"
    concept.mkdir(parents=True, exist_ok=True)  # the submission's compile may make it first
    (concept / "invoice.md").write_text(  # by hand: YAML escapes for the controls
        '---\ntitle: "Invoice\\u202Egnp.exe\\0"\ntype: concept\nsummary: "s\\u202E"\n---\n\nBody.\n'
    )
    pages = ["/status", "/wiki", "/wiki/concept/invoice.md", f"/chat/{sid}", "/chat",
             "/api/tasks", "/api/wiki", f"/api/sessions/{sid}"]  # fmt: skip
    for page in pages:
        text = client.get(page).text
        assert "Invoice" in text, page
        for char in ("\u202e", "\x00", "\u2066", "\u2069", "\\u202e", "\\u0000"):
            assert char not in text, (page, char)
