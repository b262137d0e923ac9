import json
import os
import re
import shutil
import sys
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from starlette.testclient import TestClient

from tests.fakes import kb_responder
from tests.fakes.fake_llm import FakeLLM
from tests.fakes.openai_server import FakeOpenAIServer
from tests.web.live import LiveServer, model_env
from web import create_app

LOOPBACK = "http://127.0.0.1"
CHROMIUM = os.environ.get("KB_AI_CHROMIUM", "/usr/bin/chromium")
# The marks of a module of browser tests (Debian's chromium through Playwright):
# ``pytestmark = BROWSER``.
BROWSER = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not shutil.which(CHROMIUM), reason=f"no chromium at {CHROMIUM} (apt-get install chromium)"
    ),
]


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


@contextmanager
def html_site(body: bytes, path: str):
    """Another web site on loopback that answers every GET with one HTML page; yields
    the URL ``path`` has there."""

    class Site(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's naming)
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{path}"
    finally:
        server.shutdown()
        server.server_close()


# -- a real server and a real browser ------------------------------------------------------


@contextmanager
def serving(kb_dir, responder, ready_headers=None, **env):
    """`kb-ai serve` over ``kb_dir`` on a free loopback port, in a subprocess, its model
    the fake OpenAI-wire server answering with ``responder``; ``env`` adds settings,
    ``ready_headers`` what its readiness check sends."""
    with FakeOpenAIServer(responder) as model:
        command = [sys.executable, "-m", "kb_ai", "--kb", str(kb_dir), "serve"]
        settings = {**model_env(model.base_url, kb_dir), **env}
        command = [*command, "--host", "127.0.0.1"]
        with LiveServer(settings, command=command, ready_headers=ready_headers) as live:
            yield live


@pytest.fixture(scope="module")
def browser():
    """Headless chromium, one for the module."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield launched
        launched.close()


@contextmanager
def watched_page(browser, base_url, viewport=None):
    """A page in a fresh context on ``base_url``; when the block ends, any script error
    the page raised fails the test."""
    options = {"viewport": viewport} if viewport else {}
    context = browser.new_context(base_url=base_url, **options)
    errors = []
    try:
        page = context.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        yield page
    finally:
        context.close()
    assert errors == [], errors


@pytest.fixture
def viewport():
    """The window size of ``page`` (None: Playwright's); a module may override it."""
    return None


@pytest.fixture
def page(browser, server, viewport):
    """A page on the module's ``server`` fixture (a :func:`serving` server)."""
    with watched_page(browser, server.url, viewport) as opened:
        yield opened
