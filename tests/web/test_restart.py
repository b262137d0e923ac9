"""A task leased by a server that died is compiled by the next server."""

import threading
import time
from dataclasses import replace

import httpx

from tests.fakes.kb_responder import respond, stage_of
from tests.fakes.openai_server import FakeOpenAIServer
from tests.web.conftest import wait_for
from tests.web.live import LiveServer, model_env
from wiki import KnowledgeBase, list_articles

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
        env = {**model_env(model.base_url, kb.root), "KB_AI_TEST_LEASE": "1"}
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
