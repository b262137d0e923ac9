"""Answers streamed as server-sent events, and chat sessions kept in state.db."""

import time

from tests.web.conftest import sse

QUESTION = {"question": "How long are nightly backups kept?"}
ARTICLE = "wiki/concept/nightly-backups.md"


def ask(client, body):
    with client.stream("POST", "/api/ask", json=body) as r:
        assert r.status_code == 200, r.read()
        return r.headers.get("x-session-id"), list(sse(r))


def test_an_answer_streams_in_with_citations_and_is_saved(compiled):
    sid, events = ask(compiled, QUESTION)
    kinds = [k for k, _ in events]
    assert kinds[0] == "status" and "delta" in kinds and kinds[-1] == "done"
    done = events[-1][1]
    assert done["citations"] == [{"title": "Nightly backups", "path": ARTICLE}]
    assert f'href="/{ARTICLE}#L' in done["html"] and done["session"] == sid
    assert done["checked"] == "Cited claims: 1 of 1 supported by the lines they cite."
    assert done["usage"]["calls"] == 2
    streamed = "".join(d["text"] for k, d in events if k == "delta")
    assert "nightly at 02:00" in streamed
    session = compiled.get(f"/api/sessions/{sid}").json()["session"]
    assert session["title"] == QUESTION["question"]
    assert [m["role"] for m in session["messages"]] == ["user", "assistant"]
    assert session["messages"][1]["citations"] == done["citations"]


def test_a_new_session_sends_its_title_for_the_side_list(compiled):
    from urllib.parse import unquote

    question = "  Wie lange   werden Sicherungen aufbewahrt — 备份保留多久?  "
    with compiled.stream("POST", "/api/ask", json={"question": question}) as r:
        title = unquote(r.headers["x-session-title"])
        sid = r.headers["x-session-id"]
        r.read()
    assert title == " ".join(question.split())
    assert compiled.get(f"/api/sessions/{sid}").json()["session"]["title"] == title
    with compiled.stream("POST", "/api/ask", json={"question": "And?", "session": sid}) as r:
        assert "x-session-title" not in r.headers  # nothing new to list
        r.read()


def test_a_follow_up_in_a_session_sees_the_history(compiled):
    sid, _ = ask(compiled, QUESTION)
    again, events = ask(compiled, {"question": "And when do they run?", "session": sid})
    assert again == sid and events[-1][0] == "done"
    assert any(d.get("stage") == "rewriting" for k, d in events if k == "status")
    assert len(compiled.get(f"/api/sessions/{sid}").json()["session"]["messages"]) == 4


def test_bad_questions_get_clear_errors(client, compiled):
    r = client.post("/api/ask", json={"question": "  "})
    assert r.status_code == 400 and "empty" in r.json()["error"]
    sessions = compiled.get("/api/sessions").json()["sessions"]
    r = client.post("/api/ask", json={"question": "Why did DNS move? " + "And why? " * 450})
    assert r.status_code == 400 and "over 4,000 characters" in r.json()["error"], r.json()
    assert r.json()["hint"] == "shorten it"
    assert compiled.get("/api/sessions").json()["sessions"] == sessions  # none saved for it
    r = client.post("/api/ask", json={"question": "x", "session": "nope"})
    assert r.status_code == 404 and r.json()["ok"] is False
    r = client.post("/api/ask", json={"question": "x", "paths": "wiki/a.md"})
    assert r.status_code == 400
    _, events = ask(client, {"question": "x", "paths": ["../../kb-ai.toml"], "save": False})
    assert events[-1][0] == "error" and events[-1][1]["kind"] == "PathEscapeError"


def test_an_empty_wiki_answers_with_an_error_event(client):
    _, events = ask(client, {**QUESTION, "save": False})
    assert (
        events == [("error", {**events[0][1], "kind": "EmptyWikiError", "session": None})]
        and "no articles" in events[0][1]["error"]
    )


def test_a_client_that_leaves_mid_stream_still_gets_its_answer_saved(compiled, model):
    model.delay = 0.2  # each model call takes a while: the client leaves before the answer
    with compiled.stream("POST", "/api/ask", json=QUESTION) as r:
        sid = r.headers["x-session-id"]
        kind, _ = next(sse(r))
        assert kind == "status"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        messages = compiled.get(f"/api/sessions/{sid}").json()["session"]["messages"]
        if len(messages) == 2:
            break
        time.sleep(0.05)
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert "nightly at 02:00" in messages[1]["content"]


def test_sessions_are_listed_renamed_and_deleted(client):
    created = client.post("/api/sessions", json={"title": "Backups"})
    assert created.status_code == 201
    sid = created.json()["session"]["id"]
    assert [s["id"] for s in client.get("/api/sessions").json()["sessions"]] == [sid]
    renamed = client.patch(f"/api/sessions/{sid}", json={"title": "  Backup policy "})
    assert renamed.json()["session"]["title"] == "Backup policy"
    assert client.patch(f"/api/sessions/{sid}", json={"title": " "}).status_code == 400
    assert client.patch(f"/api/sessions/{sid}", json={}).status_code == 400
    assert client.delete(f"/api/sessions/{sid}").json() == {"ok": True, "deleted": sid}
    gone = client.get(f"/api/sessions/{sid}")
    assert gone.status_code == 404 and gone.json()["status"] == 404
    assert client.delete(f"/api/sessions/{sid}").status_code == 404


def test_after_a_model_failure_the_next_question_gets_a_fresh_client(compiled, model):
    from kb_ai.errors import LLMTransientError

    opened = []
    factory = model.factory

    def counting(settings, **kwargs):
        opened.append(factory(settings, **kwargs))
        return opened[-1]

    model.factory = counting
    compiled.app.state.services.llm_factory = counting
    respond = model.handler
    model.handler = lambda *a: LLMTransientError("the model went away")
    _, events = ask(compiled, QUESTION)
    assert events[-1][0] == "error" and "went away" in events[-1][1]["error"]
    model.handler = respond
    _, events = ask(compiled, QUESTION)
    assert events[-1][0] == "done" and events[-1][1]["citations"]
    assert len(opened) == 2  # the failed client was dropped, not reused


def test_a_reopened_session_shows_each_answer_with_its_checked_line(compiled):
    sid, events = ask(compiled, QUESTION)
    done = events[-1][1]
    assert done["checked"].startswith("Cited claims: 1 of 1")
    page = compiled.get(f"/chat/{sid}").text
    answer = page.split('<li class="msg assistant">', 1)[1].split("</li>", 1)[0]
    assert done["html"] in answer  # the cited lines' links (#L...) as shown live
    assert f'<p class="checked">{done["checked"]}</p>' in answer
    assert f'Sources: <a href="/{ARTICLE}">Nightly backups</a>' in answer
    (_, saved) = compiled.get(f"/api/sessions/{sid}").json()["session"]["messages"]
    assert saved["checked"] == done["checked"] and saved["notes"] == []


def test_an_answer_kept_before_the_checked_line_opens_without_one(kb, settings, model):
    """A state.db whose chat schema is from before answers kept their "Cited claims"
    line (version 5): upgraded when the chat opens, its answers shown without it."""
    from contextlib import closing

    from retrieval.sessions import MIGRATIONS
    from tests.web.conftest import make_client
    from wiki import open_state
    from wiki.schema import apply_migrations

    then = "2026-01-01T00:00:00+00:00"
    with closing(open_state(kb)) as conn:
        apply_migrations(conn, "chat", MIGRATIONS[:5])
        conn.execute(
            "INSERT INTO chat_sessions (id, title, created_at, updated_at) VALUES (?, ?, ?, ?)",
            ("s1", "Backups, asked before", then, then),
        )
        conn.executemany(
            "INSERT INTO chat_messages (session_id, role, content, citations, created_at)"
            " VALUES ('s1', ?, ?, ?, ?)",
            [
                ("user", "When do backups run?", "[]", then),
                (
                    "assistant",
                    f"Nightly at 02:00 [Nightly backups]({ARTICLE}#L7).",
                    f'[{{"title": "Nightly backups", "path": "{ARTICLE}"}}]',
                    then,
                ),
            ],
        )
        conn.commit()
    with make_client(settings, model) as client:
        r = client.get("/chat/s1")
        assert r.status_code == 200, r.text
        answer = r.text.split('<li class="msg assistant">', 1)[1].split("</li>", 1)[0]
        assert "Nightly at 02:00" in answer and f'href="/{ARTICLE}#L7"' in answer
        assert f'Sources: <a href="/{ARTICLE}">Nightly backups</a>' in answer
        assert 'class="checked"' not in answer and 'class="note"' not in answer
        (_, saved) = client.get("/api/sessions/s1").json()["session"]["messages"]
        assert saved["checked"] == "" and saved["notes"] == []
