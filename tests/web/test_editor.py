"""The browser's editor through Starlette's TestClient: an article is edited and saved as
one commit by the editor, a second save over a version that changed is a conflict, a
broken frontmatter is refused with its line, and a form without the page's CSRF token
changes nothing."""

from __future__ import annotations

import re
from contextlib import closing

import pytest

from tests.web.conftest import csrf_token, make_client
from wiki import KnowledgeBase, git, list_articles, open_state, read_article
from wiki.lock import compile_lock
from wiki.search import SearchIndex


def edit_form(client, path):
    page = client.get(f"/edit/{path[5:]}")
    assert page.status_code == 200, page.text
    base = re.search(r'name="base" value="([0-9a-f]{40})"', page.text).group(1)
    text = re.search(r"<textarea[^>]*>(.*?)</textarea>", page.text, re.S).group(1)
    return base, _unescape(text)


def _unescape(html: str) -> str:
    import html as h

    return h.unescape(html)


@pytest.fixture
def article(compiled, settings):
    kb = KnowledgeBase.open(settings.kb_dir)
    (path,) = list_articles(kb)
    return compiled, kb, path


def save(client, path, text, base, token, message="Note the restore drill", **extra):
    data = {"text": text, "base": base, "message": message, "csrf": token, "action": "save"}
    return client.post(f"/edit/{path[5:]}", data={**data, **extra}, follow_redirects=False)


def test_an_edit_is_saved_as_one_commit_by_the_editor_and_shown_in_history(article):
    client, kb, path = article
    page = client.get("/" + path)
    assert f'href="/edit/{path[5:]}"' in page.text  # the article's Edit button
    base, text = edit_form(client, path)
    assert text.startswith("---\ntitle: ")
    mine = "A restore drill runs on the first Monday of each month."
    commits = int(git(kb, "rev-list", "--count", "HEAD"))
    # a browser sends CRLF line ends: the file keeps LF
    r = save(client, path, (text.rstrip("\n") + f"\n\n{mine}\n").replace("\n", "\r\n"),
             base, csrf_token(client))  # fmt: skip
    assert r.status_code == 303, r.text
    assert int(git(kb, "rev-list", "--count", "HEAD")) == commits + 1
    assert mine in read_article(kb, path).body.splitlines()
    assert "\r" not in kb.resolve(path).read_text(encoding="utf-8")
    who = git(kb, "log", "-1", "--format=%an|%cn|%s|%(trailers:key=Kb-Ai-Commit,valueonly)")
    assert who.strip() == "web user|kb-ai|Note the restore drill|"  # a person's, not kb-ai's
    assert git(kb, "show", "--stat", "--format=", "HEAD").count("|") == 1  # one file
    # history says who changed what, and the diff shows the line
    shown = client.get(r.headers["location"])
    assert "hand edit" in shown.text and "Note the restore drill" in shown.text
    assert f"+{mine}" in shown.text


def test_an_edit_of_title_and_summary_is_what_the_wiki_lists_and_health_is_clean(article):
    """The index lines and the search tables follow the save: the Wiki page lists the new
    title, Health has nothing to repair, and the article is found by its new words."""
    client, kb, path = article
    base, text = edit_form(client, path)
    assert "title: Nightly backups" in text
    edited = re.sub(r"summary: .*", "summary: Copies of the invoices database.", text, count=1)
    edited = edited.replace("title: Nightly backups", "title: Invoice database backups", 1)
    edited = edited.rstrip("\n") + "\n\nThe zebrafish drill restores last night's copy.\n"
    r = save(client, path, edited, base, csrf_token(client), message="Retitle the backups")
    assert r.status_code == 303, r.text
    listed = client.get("/wiki").text
    assert "Invoice database backups" in listed and ">Nightly backups<" not in listed
    health = client.get("/health").text
    assert 'data-check="tables"' not in health and 'data-check="index-stale"' not in health
    assert git(kb, "log", "-1", "--format=%an %s").strip() == "web user Retitle the backups"
    changed = git(kb, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(changed) == ["index/master-index.md", "index/topics.md", path]  # one commit
    with closing(open_state(kb)) as conn:
        assert [h.path for h in SearchIndex(conn).search("zebrafish drill")] == [path]


def test_a_save_during_a_compile_leaves_the_indexes_to_that_compile(article):
    client, kb, path = article
    base, text = edit_form(client, path)
    edited = text.replace("title: Nightly backups", "title: Invoice database backups", 1)
    lock = compile_lock(kb)
    assert lock.acquire(blocking=False)  # a compile is writing
    try:
        assert save(client, path, edited, base, csrf_token(client)).status_code == 303
    finally:
        lock.release()
    assert git(kb, "show", "--name-only", "--format=", "HEAD").split() == [path]
    assert 'data-check="tables"' not in client.get("/health").text  # searched as saved
    from tests.web.conftest import wait_for

    other = {"title": "Queue workers", "content": "# Queue workers\n\nThe queue has 4 workers.\n"}
    task = client.post("/api/submit", json=other).json()["tasks"][0]
    assert wait_for(client, task["id"])["state"] == "done"
    assert "Invoice database backups" in client.get("/wiki").text
    assert 'data-check="index-stale"' not in client.get("/health").text


def test_a_preview_renders_without_saving(article):
    client, kb, path = article
    base, text = edit_form(client, path)
    before = kb.resolve(path).read_text(encoding="utf-8")
    r = client.post(f"/edit/{path[5:]}", data={"text": text + "\n**Checked** by ops.\n",
                    "base": base, "csrf": csrf_token(client), "action": "preview"})  # fmt: skip
    assert r.status_code == 200 and "<strong>Checked</strong> by ops." in r.text
    assert kb.resolve(path).read_text(encoding="utf-8") == before


def test_the_second_of_two_saves_over_one_version_is_a_conflict(article):
    client, kb, path = article
    base, text = edit_form(client, path)
    token = csrf_token(client)
    assert save(client, path, text + "\nFirst person's line.\n", base, token).status_code == 303
    after_first = kb.resolve(path).read_text(encoding="utf-8")
    r = save(client, path, text + "\nSecond person's line.\n", base, token)
    assert r.status_code == 409
    assert "changed since you opened it" in r.text
    assert "Second person&#39;s line." in r.text  # their text is kept in the form
    assert "First person&#39;s line." in r.text  # and the version saved meanwhile is shown
    assert kb.resolve(path).read_text(encoding="utf-8") == after_first


@pytest.mark.parametrize(
    ("change", "line", "why"),
    [
        (lambda t: t.replace("title: ", "title: [unclosed ", 1), 2, "not valid YAML"),
        (lambda t: t.replace("\n---\n", "\n", 1), 1, "no closing '---'"),
        (lambda t: re.sub(r"sources:\n(- .*\n)+", "sources: []\n", t), None, "sources must stay"),
    ],
)
def test_an_edit_that_breaks_the_frontmatter_is_refused_with_the_line(article, change, line, why):
    client, kb, path = article
    base, text = edit_form(client, path)
    broken = change(text)
    assert broken != text
    before = kb.resolve(path).read_text(encoding="utf-8")
    commits = git(kb, "rev-parse", "HEAD")
    r = save(client, path, broken, base, csrf_token(client))
    shown = _unescape(r.text)
    assert r.status_code == 400 and why in shown, shown
    if line is None:
        line = broken.splitlines().index("sources: []") + 1
    assert f"line {line}:" in shown
    assert kb.resolve(path).read_text(encoding="utf-8") == before
    assert git(kb, "rev-parse", "HEAD") == commits


def test_a_save_without_the_pages_csrf_token_changes_nothing(article):
    client, kb, path = article
    base, text = edit_form(client, path)
    before = kb.resolve(path).read_text(encoding="utf-8")
    for token in ("", "not-the-token"):
        r = save(client, path, text + "\nForged.\n", base, token)
        assert r.status_code == 403
    # a foreign page's form (another origin) is refused before the form is read
    r = client.post(
        f"/edit/{path[5:]}",
        data={"text": text + "\nForged.\n", "base": base, "csrf": csrf_token(client),
              "action": "save"},
        headers={"Origin": "http://evil.example"},
    )  # fmt: skip
    assert r.status_code == 403
    assert kb.resolve(path).read_text(encoding="utf-8") == before


def test_the_editor_names_the_configured_editor_as_author(settings, model, tmp_path):
    from dataclasses import replace

    from tests.web.conftest import NOTE, wait_for

    with make_client(replace(settings, web_editor="Priya Raman"), model) as client:
        task = client.post("/api/submit", json=NOTE).json()["tasks"][0]
        assert wait_for(client, task["id"])["state"] == "done"
        kb = KnowledgeBase.open(settings.kb_dir)
        (path,) = list_articles(kb)
        base, text = edit_form(client, path)
        assert (
            save(client, path, text + "\nChecked.\n", base, csrf_token(client)).status_code == 303
        )
        assert git(kb, "log", "-1", "--format=%an|%cn").strip() == "Priya Raman|kb-ai"


def test_an_update_meeting_an_edit_waits_on_the_review_page_with_both_versions(article):
    """The person and the revised note both change how long copies are kept."""
    client, kb, path = article
    base, text = edit_form(client, path)
    mine = "kept for thirty days in a separate account, encrypted with the ops key."
    token = csrf_token(client)
    fact = "kept for thirty days in a separate account."
    assert fact in text
    assert save(client, path, text.replace(fact, mine), base, token).status_code == 303
    edited = kb.resolve(path).read_text(encoding="utf-8")

    from tests.web.conftest import NOTE, wait_for

    revised = {**NOTE, "content": NOTE["content"].replace("thirty days", "ninety days")}
    task = client.post("/api/submit", json=revised).json()["tasks"][0]
    done = wait_for(client, task["id"])
    assert done["state"] == "done"
    assert kb.resolve(path).read_text(encoding="utf-8") == edited  # main: the person's
    # Status says the update waits, not only that the document compiled
    assert done["result"]["held"] == [path] and done["result"]["updated"] == []
    status = _unescape(client.get("/status").text)
    assert status.count(f'class="held">held for review: <a href="/{path}">') == 2  # task, run
    assert "a hand edit, which stays on main" in status and 'href="/review"' in status

    health = client.get("/health").text
    assert 'data-check="hand-edit"' in health
    page = _unescape(client.get("/review").text)
    held = page[page.index('<section class="held"') :]
    person = held[held.index('<pre class="person">') : held.index("</pre>")]
    kb_ai = held[held.index('<pre class="kb-ai">') :]
    kb_ai = kb_ai[: kb_ai.index("</pre>")]
    assert mine in person and mine not in kb_ai and "ninety days" in kb_ai
    run = re.search(r'action="/review/([^/"]+)/reject"', page).group(1)
    assert run.endswith("-edits")

    assert client.post(f"/review/{run}/reject", data={"csrf": token}).status_code == 200
    assert kb.resolve(path).read_text(encoding="utf-8") == edited
    assert 'data-check="hand-edit"' not in client.get("/health").text
