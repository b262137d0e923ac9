"""People and roles on the server: each route needs its role (a reader's write gets 403,
a wrong or revoked token 401, both in the one error shape), what a person submits is
compiled with them as git author, and the audit log says who did what from where."""

import pytest

from kb_ai.service import open_kb, people
from tests.web.conftest import NOTE, make_client, wait_for
from wiki import KnowledgeBase, git, open_state
from wiki.audit import AuditLog


@pytest.fixture
def tokens(settings):
    okb = open_kb(settings=settings)
    return {
        role: people.add(okb, name, role, email)[1]
        for name, role, email in [
            ("Rita Reader", "reader", None),
            ("Cora Contributor", "contributor", "cora@example.org"),
            ("Rex Reviewer", "reviewer", None),
        ]
    }


def bearer(token):
    return {"authorization": f"Bearer {token}"}


def test_each_role_gets_what_it_may_and_no_more(settings, model, tokens):
    with make_client(settings, model, start_worker=False) as client:
        assert client.get("/api/tasks").status_code == 401  # people exist: a token is needed
        reader = client.post("/api/submit", json=NOTE, headers=bearer(tokens["reader"]))
        assert reader.status_code == 403
        body = reader.json()
        assert body["ok"] is False and body["status"] == 403 and body["kind"] == "ForbiddenError"
        assert "reader" in body["error"] and "kb-ai users role" in body["hint"]
        assert client.get("/api/tasks", headers=bearer(tokens["reader"])).json()["tasks"] == []
        editor = client.get("/edit/concept/x.md", headers=bearer(tokens["reader"]))
        assert editor.status_code == 403  # the article editor is a contributor's

        done = client.post("/api/submit", json=NOTE, headers=bearer(tokens["contributor"]))
        assert done.status_code == 202
        assert done.json()["tasks"][0]["submitted_by"] == "Cora Contributor"

        wrong = client.get("/api/tasks", headers=bearer(tokens["reader"][:-2] + "xx"))
        assert wrong.status_code == 401
        assert set(wrong.json()) == {"ok", "error", "status", "kind", "hint"}
        assert tokens["reader"] not in wrong.text

        page = client.post(
            "/review/1/approve", data={"csrf": "x"}, headers=bearer(tokens["contributor"])
        )
        assert page.status_code == 403


def test_a_revoked_token_is_refused_at_once(settings, model, tokens):
    with make_client(settings, model, start_worker=False) as client:
        old = tokens["reader"]
        assert client.get("/api/tasks", headers=bearer(old)).status_code == 200
        new = people.new_token(open_kb(settings=settings), "Rita Reader")
        assert client.get("/api/tasks", headers=bearer(old)).status_code == 401
        assert client.get("/api/tasks", headers=bearer(new)).status_code == 200
        people.remove(open_kb(settings=settings), "Rita Reader")
        assert client.get("/api/tasks", headers=bearer(new)).status_code == 401


def test_pages_show_a_reader_no_button_they_may_not_use(settings, model, tokens):
    with make_client(settings, model, start_worker=False) as client:
        client.get(f"/status?token={tokens['reader']}")  # signs in: the cookie keeps it
        status = client.get("/status").text
        assert 'href="/submit"' not in status.split("</nav>")[0]
        assert 'href="/review"' not in status.split("</nav>")[0]
        assert "Rita Reader (reader)" in status
    with make_client(settings, model, start_worker=False) as client:
        client.get(f"/status?token={tokens['reviewer']}")
        nav = client.get("/status").text.split("</nav>")[0]
        assert 'href="/submit"' in nav and 'href="/review"' in nav


def test_a_contributors_submission_is_compiled_as_them_and_audited(settings, model, tokens):
    with make_client(settings, model) as client:
        task = client.post("/api/submit", json=NOTE, headers=bearer(tokens["contributor"]))
        done = wait_for_with(client, task.json()["tasks"][0]["id"], tokens["contributor"])
        status = client.get("/status", headers=bearer(tokens["reader"])).text
        runs = client.get("/api/tasks", headers=bearer(tokens["reader"])).json()["runs"]
    assert done["state"] == "done", done
    assert [r["started_by"] for r in runs] == ["Cora Contributor (web)"]  # the run says who
    assert "<td>Cora Contributor (web)</td>" in status
    kb = KnowledgeBase.open(settings.kb_dir)
    sha = done["result"]["commit"]
    assert git(kb, "show", "-s", "--format=%an|%ae|%cn", sha).strip() == (
        "Cora Contributor|cora@example.org|kb-ai"
    )
    assert "by Cora Contributor" in status
    (raw,) = (kb.root / "raw").glob("*.md")  # its provenance names who submitted it
    assert "submitted_by: Cora Contributor <cora@example.org> (person)" in raw.read_text()
    entries = AuditLog(open_state(kb)).entries()
    submits = [e for e in entries if e.action == "submit"]
    assert [(e.who, e.target, e.address) for e in submits] == [
        ("Cora Contributor", NOTE["title"], "testclient")
    ]
    for token in tokens.values():
        assert all(token not in e.line for e in entries)


def wait_for_with(client, task_id, token):
    client.headers.update(bearer(token))
    try:
        return wait_for(client, task_id)
    finally:
        del client.headers["authorization"]


def test_a_sign_in_and_a_failed_one_are_audited(settings, model, tokens):
    with make_client(settings, model, start_worker=False) as client:
        client.get(f"/wiki?token={tokens['reviewer']}", follow_redirects=False)
        client.cookies.clear()
        assert client.get("/wiki?token=kb_nope.wrong").status_code == 401
    entries = AuditLog(open_state(KnowledgeBase.open(settings.kb_dir))).entries()
    assert [(e.who, e.action) for e in entries if "sign-in" in e.action] == [
        ("Rex Reviewer", "sign-in"),
        ("unknown", "sign-in-failed"),
    ]


def test_without_people_or_a_token_the_local_user_may_do_everything(client):
    assert client.post("/api/submit", json=NOTE).status_code == 202
    assert 'href="/review"' in client.get("/status").text


def test_one_persons_questions_cannot_use_up_everyones(kb, model, tokens):
    """questions_per_minute: a bucket per person; the next question waits (429)."""
    from kb_ai.settings import load_settings

    (kb.root / "kb-ai.toml").write_text("questions_per_minute = 2\n")
    settings = load_settings(kb.root, {"model": "fake/model"}, environ={})
    question = {"question": "How long are backups kept?", "save": False}
    with make_client(settings, model, start_worker=False) as client:
        for _ in range(2):
            ok = client.post("/api/ask", json=question, headers=bearer(tokens["reader"]))
            assert ok.status_code == 200
        third = client.post("/api/ask", json=question, headers=bearer(tokens["reader"]))
        assert third.status_code == 429 and third.json()["kind"] == "TooManyQuestionsError"
        assert 1 <= int(third.headers["retry-after"]) <= 30
        other = client.post("/api/ask", json=question, headers=bearer(tokens["contributor"]))
        assert other.status_code == 200  # someone else still gets an answer


def test_a_sign_on_proxy_names_the_person_only_from_its_own_address(kb, model, tokens):
    from starlette.testclient import TestClient

    from kb_ai.settings import load_settings
    from tests.web.conftest import LOOPBACK
    from web import create_app

    (kb.root / "kb-ai.toml").write_text(
        'trusted_user_header = "X-Forwarded-User"\ntrusted_proxies = "10.0.0.0/8"\n'
        'default_role = "contributor"\n'
    )
    settings = load_settings(kb.root, {"model": "fake/model"}, environ={})
    app = create_app(settings, llm_factory=model.factory, start_worker=False)
    as_proxy = TestClient(app, base_url=LOOPBACK, client=("10.1.2.3", 4000))
    elsewhere = TestClient(app, base_url=LOOPBACK, client=("192.0.2.9", 4000))
    with as_proxy, elsewhere:
        known = as_proxy.get("/status", headers={"x-forwarded-user": "Rita Reader"})
        assert known.status_code == 200 and "Rita Reader (reader)" in known.text
        new = as_proxy.post("/api/submit", json=NOTE, headers={"x-forwarded-user": "Nia New"})
        assert new.status_code == 202 and new.json()["tasks"][0]["submitted_by"] == "Nia New"
        forged = elsewhere.get("/api/tasks", headers={"x-forwarded-user": "Rex Reviewer"})
        assert forged.status_code == 401


def test_wrong_tokens_from_one_address_wait_and_cost_no_hash(
    settings, model, tokens, monkeypatch, caplog
):
    """A wrong token whose id is known makes the server compute scrypt; past a few in a
    row from one address, the next waits (429 + Retry-After) without one, while a token
    the server knows good still works from there. No token appears in a reply."""
    import logging

    import wiki.people

    caplog.set_level(logging.DEBUG)
    hashed = []
    real = wiki.people.hash_secret
    monkeypatch.setattr(wiki.people, "hash_secret", lambda *a: hashed.append(1) or real(*a))
    good = tokens["reader"]
    token_id = good.split(".")[0]
    with make_client(settings, model, start_worker=False) as client:
        assert client.get("/api/tasks", headers=bearer(good)).status_code == 200
        replies = []
        for n in range(5):  # a few in a row are free (a typo fixed at once)
            wrong = client.get("/api/tasks", headers=bearer(f"{token_id}.guess{n}"))
            assert wrong.status_code == 401
            replies.append(wrong)
        sixth = client.get("/api/tasks", headers=bearer(f"{token_id}.guess5"))
        assert sixth.status_code == 401  # the first that costs a wait
        before = len(hashed)
        assert before >= 6  # each wrong token so far was hashed: the counting works
        waiting = client.get("/api/tasks", headers=bearer(f"{token_id}.guess6"))
        assert waiting.status_code == 429 and int(waiting.headers["retry-after"]) >= 1
        assert waiting.json()["kind"] == "TooManyError"
        assert "Too many wrong tokens" in waiting.json()["error"]
        assert len(hashed) == before  # refused before any scrypt
        assert client.get("/api/tasks", headers=bearer(good)).status_code == 200
        fresh = client.get("/api/tasks", headers=bearer(tokens["contributor"]))
        assert fresh.status_code == 429  # not known good yet: it waits like the rest
        page = client.get("/wiki", headers=bearer(f"{token_id}.guess7"))
        for reply in [*replies, sixth, waiting, page]:
            assert "guess" not in reply.text and token_id + "." not in reply.text
    entries = AuditLog(open_state(KnowledgeBase.open(settings.kb_dir))).entries()
    assert all("guess" not in e.line for e in entries)
    assert "guess" not in caplog.text and good not in caplog.text


def test_each_persons_question_reaches_the_model_as_theirs(settings, model, tokens):
    """The local model serves the people waiting in turn (kb_ai/llm/_turns.py): for that,
    each model call of a question asked on the server is named for who asked it."""
    from kb_ai.llm._turns import caller
    from tests.web.conftest import respond

    callers = []

    def recording(stage, messages, schema):
        callers.append(caller.get())
        return respond(stage, messages, schema)

    model.handler = recording
    question = {"question": "How long are backups kept?", "save": False}
    with make_client(settings, model) as client:
        task = client.post("/api/submit", json=NOTE, headers=bearer(tokens["contributor"]))
        wait_for_with(client, task.json()["tasks"][0]["id"], tokens["contributor"])
        compiled, callers[:] = list(callers), []
        for role in ("reader", "reviewer"):
            asked = client.post("/api/ask", json=question, headers=bearer(tokens[role]))
            assert asked.status_code == 200
    assert set(compiled) == {"Cora Contributor"}  # the compile of her submission
    assert callers and set(callers) == {"Rita Reader", "Rex Reviewer"}
    assert callers.index("Rex Reviewer") > callers.index("Rita Reader")
