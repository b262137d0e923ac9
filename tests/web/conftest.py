import json
import re
import time

import pytest
from starlette.testclient import TestClient

from tests.fakes import kb_responder
from tests.fakes.fake_llm import FakeLLM
from web import create_app

LOOPBACK = "http://127.0.0.1"


def respond(stage, messages, schema):
    """kb_responder's answers in-process: what the fake model server would say."""
    request = {"messages": messages}
    if schema is not None:
        request["response_format"] = {"type": "json_schema", "json_schema": {"schema": schema}}
    text = kb_responder.respond(request).content
    return json.loads(text) if schema is not None else text


class Model:
    """The model every FakeLLM the app opens delegates to; tests swap ``handler``."""

    def __init__(self):
        self.handler = respond
        self.delay = 0.0

    def factory(self, settings, **kwargs):
        return FakeLLM(lambda *a: self.handler(*a), delay=self.delay)


@pytest.fixture
def model():
    return Model()


def make_client(settings, model, **options):
    options = {"status_interval": 0.05, "worker_poll_seconds": 0.05, **options}
    app = create_app(settings, llm_factory=model.factory, **options)
    return TestClient(app, base_url=LOOPBACK)


@pytest.fixture
def client(settings, model):
    with make_client(settings, model) as c:
        yield c


def wait_for(client, task_id, states=("done", "failed"), timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        task = client.get(f"/api/tasks/{task_id}").json()["task"]
        if task["state"] in states:
            return task
        time.sleep(0.05)
    raise AssertionError(f"task {task_id} still {task['state']} after {timeout} s")


NOTE = {
    "title": "Nightly backups",
    "content": "# Nightly backups\n\nBackups of the main database run nightly at 02:00. "
    "Backup copies are kept for thirty days in a separate account.\n",
}


@pytest.fixture
def compiled(client):
    """The client, with one note compiled into an article."""
    task = client.post("/api/submit", json=NOTE).json()["tasks"][0]
    assert wait_for(client, task["id"])["state"] == "done"
    return client


def sse(response):
    """(event, data) pairs of a streamed text/event-stream response, as they arrive."""
    event = None
    for line in response.iter_lines():
        if line.startswith("event:"):
            event = line.split(":", 1)[1].strip()
        elif line.startswith("data:"):
            yield event, json.loads(line.split(":", 1)[1])


def csrf_token(client):
    """The CSRF token every page carries (what the page's forms and kb.js send back)."""
    page = client.get("/submit").text
    return re.search(r'<meta name="kb-ai-csrf" content="([^"]+)">', page).group(1)
