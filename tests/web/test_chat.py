"""Answers streamed as server-sent events, and chat sessions kept in state.db."""

import time
from html import escape

from starlette.testclient import TestClient

from tests.web.conftest import sse
from web import create_app

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
        assert saved["checked"] == "" and saved["notes"] == [] and saved["error"] is None


def test_an_answer_that_fails_is_kept_as_failed_and_shown_so_on_reload(kb):
    """The model (real HTTP, loopback) does not answer in time: the question and
    a failed entry with the error event's message and hint are kept in the session, and
    a reload shows them as a failed answer (no answer text, no sources, no checked
    line), not as an answer; the next answer in the session is asked without it."""
    from contextlib import closing

    from kb_ai.settings import load_settings
    from retrieval import ChatStore
    from tests.fakes.faulty_server import FaultyModel, faulty_server
    from wiki import Article, build_catalog, commit_all, open_state, write_article
    from wiki.catalog import write_indexes

    body = "# Nightly backups\n\nBackups of the main database run nightly at 02:00.\n"
    write_article(kb, Article(ARTICLE, "Nightly backups", "concept", "Backups", ["concept"],
                              ["raw/none.md"], "2026-01-01", "2026-01-01", body))  # fmt: skip
    write_indexes(kb, build_catalog(kb))
    commit_all(kb, "Add an article")
    faulty = FaultyModel("hang", stages={"answer"})
    with faulty_server(faulty) as server:
        settings = load_settings(
            kb.root,
            {"model": "openai/fake", "api_base": server.base_url, "api_key": "x",
             "retry_backoff": 0.01, "timeout_answer": 0.5, "coverage_judge": "off"},
            environ={},
        )  # fmt: skip
        app = create_app(settings, status_interval=0.05, worker_poll_seconds=0.05)
        with TestClient(app, base_url="http://127.0.0.1") as client:
            sid, events = ask(client, {"question": "When do backups run?"})
            kind, said = events[-1]
            assert kind == "error" and said["kind"] == "LLMTimeoutError", events
            page = client.get(f"/chat/{sid}").text
            asked, failed = page.split('<li class="msg ')[1:3]
            assert asked.startswith('user">') and "When do backups run?" in asked
            failed = failed.split("</li>", 1)[0]
            assert failed.startswith('assistant failed">')
            assert f'<p class="error">No answer: {escape(said["error"])}</p>' in failed
            assert said["hint"] in said["error"]  # (what to do, said in the message)
            assert 'class="md answer"' not in failed and "Sources" not in failed
            assert 'class="checked"' not in failed
            (question, entry) = client.get(f"/api/sessions/{sid}").json()["session"]["messages"]
            assert question["content"] == "When do backups run?" and question["error"] is None
            shape = {k: said[k] for k in ("ok", "error", "status", "kind", "hint") if k in said}
            assert entry["error"] == shape and entry["error"]["ok"] is False
            assert (entry["role"], entry["content"], entry["citations"]) == ("assistant", "", [])
            assert entry["checked"] == ""
            (listed,) = client.get("/api/sessions").json()["sessions"]
            assert listed["messages"] == 1  # the question; the failure is no answer

            faulty.mode = "ok"  # the model is back: the question is asked again
            again, events = ask(client, {"question": "When do backups run?", "session": sid})
            assert events[-1][0] == "done", events
            roles = [
                m["role"] for m in client.get(f"/api/sessions/{sid}").json()["session"]["messages"]
            ]
            assert roles == ["user", "assistant", "user", "assistant"]
            with closing(open_state(kb)) as conn:
                history = ChatStore(conn).history(sid)
            assert [t.role for t in history] == ["user", "user", "assistant"]
