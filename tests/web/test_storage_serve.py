"""A real `kb-ai serve` whose disk stops taking writes, and one stopped with SIGTERM in the
middle of an answer: it says so in the one error shape, and loses nothing."""

import json
import signal
import threading
import time
from contextlib import closing
from dataclasses import replace

import httpx

from retrieval import ChatStore
from tests.fakes.kb_responder import respond, stage_of
from tests.fakes.storage_faults import files_cannot_grow
from tests.web.conftest import serving, wait_for
from wiki import KnowledgeBase, list_articles, open_state

NOTE = {
    "title": "Release train",
    "content": "# Release train\n\nWe ship every Tuesday at 10:00 from main.\n",
}


def messages(kb, session):
    """The messages of a chat session, as the next server would show them."""
    with closing(open_state(kb)) as conn:
        return ChatStore(conn).get(session)["messages"]


def compiled(url, note):
    with httpx.Client(base_url=url, timeout=10) as client:
        r = client.post("/api/submit", json=note)
        assert r.status_code == 202, r.text
        return wait_for(client, r.json()["tasks"][0]["id"], timeout=30)


def test_a_disk_that_takes_no_writes_is_a_503_that_names_it_and_the_server_recovers(tmp_path):
    kb = KnowledgeBase.init(tmp_path / "kb")
    with serving(kb.root, respond) as live, httpx.Client(base_url=live.url, timeout=10) as client:
        assert client.get("/healthz").status_code == 200
        with files_cannot_grow(live.proc.pid):
            r = client.post("/api/submit", json=NOTE)
            assert r.status_code == 503, r.text
            error = r.json()
            assert (error["ok"], error["status"], error["kind"]) == (False, 503, "StorageError")
            assert "disk" in error["error"]
            health = client.get("/healthz")
            assert health.status_code == 503, health.text
            assert health.json()["checks"]["database"]["ok"] is False
            assert health.json()["error"].startswith("unhealthy: database: ")
            assert client.get("/api/tasks").json()["kind"] == "StorageError"
        deadline = time.monotonic() + 30  # a worker that met the fault waits out its pause
        while (health := client.get("/healthz")).status_code != 200:
            assert time.monotonic() < deadline, health.text
            time.sleep(0.2)
        done = compiled(live.url, NOTE)
    assert done["state"] == "done", done["error"]
    assert list_articles(kb) == ["wiki/concept/release-train.md"]


def test_sigterm_ends_an_answer_stream_with_an_error_event_and_keeps_the_question(tmp_path):
    kb = KnowledgeBase.init(tmp_path / "kb")
    slow = threading.Event()

    def responder(request):
        reply = respond(request)
        if slow.is_set() and stage_of(request) == "answer":
            return replace(reply, delay=30)  # still answering when the signal comes
        return reply

    question = "When do we ship the release train?"
    events = []
    with serving(kb.root, responder) as live:
        assert compiled(live.url, NOTE)["state"] == "done"
        slow.set()
        body = {"question": question}
        with httpx.stream("POST", f"{live.url}/api/ask", json=body, timeout=60) as r:
            session = r.headers["x-session-id"]
            event = None
            for line in r.iter_lines():
                if line.startswith("event:"):
                    event = line.split(":", 1)[1].strip()
                elif line.startswith("data:"):
                    events.append((event, json.loads(line.split(":", 1)[1])))
                    if event == "status" and len(events) == 1:
                        live.proc.send_signal(signal.SIGTERM)
        live.proc.wait(60)
    assert events[-1][0] == "error", events
    error = events[-1][1]
    assert (error["ok"], error["status"], error["session"]) == (False, 503, session)
    assert "stopping" in error["error"] and "ask it again" in error["error"]
    assert "kept in its chat session" in error["error"]
    # the question, and that its answer failed so (a reload shows it; no answer)
    asked, failed = messages(kb, session)
    assert (asked["role"], asked["content"], asked["error"]) == ("user", question, None)
    assert (failed["content"], failed["error"]["kind"]) == ("", "ServerStopping")
    assert failed["error"]["error"] == error["error"]


def test_a_question_answered_before_sigterm_is_saved_once(tmp_path):
    """The stop path keeps only questions left unanswered: an answered one is not kept a
    second time."""
    kb = KnowledgeBase.init(tmp_path / "kb")
    question = "When do we ship the release train?"
    with serving(kb.root, respond) as live:
        assert compiled(live.url, NOTE)["state"] == "done"
        with httpx.stream("POST", f"{live.url}/api/ask", json={"question": question}) as r:
            session = r.headers["x-session-id"]
            kinds = [line for line in r.iter_lines() if line.startswith("event:")]
        assert kinds[-1] == "event: done"
        time.sleep(0.2)
        live.proc.send_signal(signal.SIGTERM)
        live.proc.wait(60)
    assert [m["role"] for m in messages(kb, session)] == ["user", "assistant"]
