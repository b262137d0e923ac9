"""The shared database gone under a running `kb-ai serve` (a real process, pointed at a
TCP proxy the test stops and starts again): requests fail with one JSON error and a
hint (503), a submission is not half-queued, and once the database answers again the
server recovers by itself, its compile under way finished once, no task lost."""

import os
import subprocess
import sys
import time
from dataclasses import replace

import httpx

from tests.fakes.kb_responder import respond
from tests.fakes.openai_server import FakeOpenAIServer
from tests.shared.proxy import TcpProxy
from tests.web.live import LiveServer, model_env

ONE = {"title": "Release train", "content": "# Release train\n\nReleases leave every Tuesday at 10:00.\n"}  # fmt: skip
TWO = {"title": "On call", "content": "# On call\n\nThe on-call rota changes every Monday at 09:00.\n"}  # fmt: skip
THREE = {"title": "Backups", "content": "# Backups\n\nBackups run nightly at 02:00 for thirty days.\n"}  # fmt: skip


def slow(request):
    return replace(respond(request), delay=0.4)


def wait_until(check, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if got := check():
            return got
        time.sleep(0.1)
    raise AssertionError(f"not so after {timeout} s")


def task_state(url, task_id):
    reply = httpx.get(f"{url}/api/tasks/{task_id}", timeout=10)
    return reply.json()["task"] if reply.status_code == 200 else None


def test_the_database_gone_under_a_running_server(tmp_path, pg_url):
    proxy = TcpProxy(("127.0.0.1", 5432))
    proxy.start()
    root = tmp_path / "kb"
    with FakeOpenAIServer(slow) as model:
        env = {
            **model_env(model.base_url, root),
            "KB_AI_DATABASE_URL": proxy.url(pg_url.rsplit("/", 1)[1]),
        }
        made = subprocess.run([sys.executable, "-m", "kb_ai", "init", "--no-hint"],
                              env={**os.environ, **env}, capture_output=True, text=True)  # fmt: skip
        assert made.returncode == 0, made.stderr
        server = LiveServer(env, command=[sys.executable, "-m", "kb_ai", "serve", "--host", "127.0.0.1"])  # fmt: skip
        try:
            url = server.url
            one = httpx.post(f"{url}/api/submit", json=ONE, timeout=10).json()["tasks"][0]
            wait_until(lambda: (t := task_state(url, one["id"])) and t["state"] == "done", 60)
            two = httpx.post(f"{url}/api/submit", json=TWO, timeout=10).json()["tasks"][0]
            wait_until(lambda: (t := task_state(url, two["id"])) and t["state"] == "running", 30)

            proxy.stop()  # the database gone, mid-compile
            gone = httpx.get(f"{url}/api/tasks", timeout=30)
            assert gone.status_code == 503
            body = gone.json()
            assert body["ok"] is False and body["kind"] == "StorageError"
            assert "Could not reach the shared database" in body["error"]
            assert "reconnects by itself once it answers" in body["error"]  # the hint
            refused = httpx.post(f"{url}/api/submit", json=THREE, timeout=30)
            assert refused.status_code == 503 and refused.json()["kind"] == "StorageError"
            time.sleep(2)

            proxy.start()  # back: no restart of the server
            listed = wait_until(lambda: (r := httpx.get(f"{url}/api/tasks", timeout=30))
                                .status_code == 200 and r.json(), 30)  # fmt: skip
            titles = sorted(t["title"] for t in listed["tasks"])
            assert titles == ["On call", "Release train"]  # the refused one was not half-queued
            done = wait_until(
                lambda: (
                    (t := task_state(url, two["id"])) and t["state"] in ("done", "failed") and t
                ),
                90,
            )
            assert done["state"] == "done", done["error"]
            log = subprocess.run(["git", "-C", str(root), "log", "--format=%s"],
                                 capture_output=True, text=True, check=True).stdout  # fmt: skip
            compiles = [line for line in log.splitlines() if line.startswith("compile:")]
            assert len(compiles) == 2, log  # each note compiled once, in a commit of its own
            articles = sorted(p.name for p in (root / "wiki").rglob("*.md"))
            assert articles == ["on-call.md", "release-train.md"]
        finally:
            server.stop()
            proxy.stop()
