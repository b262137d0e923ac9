"""A server that dies or is stopped loses nothing: a task leased by a server that died is
compiled by the next server at once, and SIGTERM stops a compile as Ctrl-C does."""

import json
import signal
import sys
import threading
import time
from dataclasses import replace

import httpx

from tests.fakes.kb_responder import respond, stage_of
from tests.fakes.openai_server import FakeOpenAIServer
from tests.web.conftest import wait_for
from tests.web.live import LiveServer, model_env
from wiki import KnowledgeBase, git, list_articles

NOTE = {
    "title": "Release train",
    "content": "# Release train\n\nWe ship every Tuesday at 10:00 from main.\n",
}


def wait_state(url, task_id, wanted, timeout=30.0):
    with httpx.Client(base_url=url) as client:
        return wait_for(client, task_id, wanted, timeout)


def test_a_task_leased_by_a_server_that_died_is_compiled_by_the_next(tmp_path):
    kb = KnowledgeBase.init(tmp_path / "kb")
    hold = threading.Event()
    hold.set()

    def responder(request):
        reply = respond(request)
        if hold.is_set() and stage_of(request) == "extract":
            return replace(reply, delay=30)  # the first server dies waiting for this
        return reply

    with FakeOpenAIServer(responder) as model:
        # The lease outlasts the test: the next server must see that its holder is dead.
        env = {**model_env(model.base_url, kb.root), "KB_AI_TEST_LEASE": "600"}
        first = LiveServer(env)
        try:
            r = httpx.post(f"{first.url}/api/submit", json=NOTE)
            assert r.status_code == 202
            task_id = r.json()["tasks"][0]["id"]
            running = wait_state(first.url, task_id, {"running"})
            assert running["attempts"] == 1
            deadline = time.monotonic() + 10
            while not any(stage_of(q) == "extract" for q in model.requests):
                assert time.monotonic() < deadline
                time.sleep(0.05)
        finally:
            first.kill()  # a crash: no chance to hand the task back
        hold.clear()
        with LiveServer(env) as second:
            done = wait_state(second.url, task_id, {"done", "failed"})
    assert done["state"] == "done", done["error"]
    assert done["attempts"] == 2
    assert list_articles(kb) == ["wiki/concept/release-train.md"]


def serve(env, kb):
    return LiveServer(env, command=[sys.executable, "-m", "kb_ai", "--kb", str(kb.root),
                                    "serve", "--host", "127.0.0.1"])  # fmt: skip


def test_sigterm_stops_a_compile_like_ctrl_c_and_leaves_a_clean_work_tree(tmp_path):
    """The container stop signal mid-compile: the article that was finished is committed,
    the one still being written goes back to the queue, and nothing is left uncommitted."""
    kb = KnowledgeBase.init(tmp_path / "kb")
    hold = threading.Event()
    hold.set()

    def responder(request):
        reply = respond(request)
        if hold.is_set() and stage_of(request) == "write" and "Standup" in json.dumps(request):
            return replace(reply, delay=30)  # still being written when the signal comes
        return reply

    files = [
        ("files", ("release.md", b"# Release train\n\nWe ship every Tuesday at 10:00.\n")),
        ("files", ("standup.md", b"# Standup\n\nThe standup is at 09:30 every weekday.\n")),
    ]
    with FakeOpenAIServer(responder) as model:
        env = model_env(model.base_url, kb.root)
        server = serve(env, kb)
        try:
            tasks = httpx.post(f"{server.url}/api/submit", files=files).json()["tasks"]
            deadline = time.monotonic() + 30
            while not (kb.root / "wiki/concept/release-train.md").exists():
                assert time.monotonic() < deadline, server.output()
                time.sleep(0.05)
            server.proc.send_signal(signal.SIGTERM)
            server.proc.wait(60)
            output = server.output()
        finally:
            server.kill()
        assert git(kb, "status", "--porcelain").strip() == "", output
        assert "wiki/concept/release-train.md" in git(kb, "ls-files", "wiki")
        hold.clear()
        with serve(env, kb) as second:
            states = [wait_state(second.url, t["id"], {"done", "failed"}) for t in tasks]
    assert [t["state"] for t in states] == ["done", "done"], [t["error"] for t in states]
    assert states[1]["attempts"] == 2  # handed back, not failed
    assert list_articles(kb) == ["wiki/concept/release-train.md", "wiki/concept/standup.md"]
