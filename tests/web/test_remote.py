"""Several servers on one wiki remote: a server follows what the writer pushes (its pages
and its search), and a remote that refuses is shown on Status and /healthz without
failing the server. Real bare repositories, the app through Starlette's TestClient."""

import asyncio
import os
import subprocess
import sys
import time

import httpx

from kb_ai.service import Actor, open_kb
from kb_ai.service.compiling import compile_paths
from kb_ai.service.remote import init_from_remote
from kb_ai.settings import load_settings
from tests.fakes.kb_responder import respond
from tests.fakes.openai_server import FakeOpenAIServer
from tests.remotes import bare, refuse_pushes
from tests.web.conftest import NOTE, make_client, wait_for
from tests.web.live import LiveServer, model_env


def settings_of(root, **more):
    return load_settings(root, {"model": "fake/model", **more}, environ={})


def compile_note(root, model, tmp_path, name, text):
    """A compile on the writer, through the application layer (as its worker does)."""
    folder = tmp_path / f"notes-{name}"
    folder.mkdir()
    (folder / f"{name}.md").write_text(text, encoding="utf-8")
    okb = open_kb(settings=settings_of(root), actor=Actor.worker(), llm_factory=model.factory)
    return asyncio.run(compile_paths(okb, [folder]))


def wait_until(check, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"not so after {timeout} s")


def test_a_following_server_serves_the_writers_new_article(tmp_path, model):
    remote = bare(tmp_path / "wiki.git")
    init_from_remote(tmp_path / "writer", str(remote))
    init_from_remote(tmp_path / "reader", str(remote))  # cloned before anything was written
    follower = settings_of(tmp_path / "reader", wiki_follow_seconds=0.05)

    with make_client(follower, model, start_worker=False) as reader:
        assert "Nightly backups" not in reader.get("/wiki").text
        result = compile_note(tmp_path / "writer", model, tmp_path, "backups",
                              "# Nightly backups\n\nBackups run nightly at 02:00.\n")  # fmt: skip
        (path,) = result.created

        page = wait_until(lambda: (r := reader.get(f"/{path}")).status_code == 200 and r)
        assert "Nightly backups" in page.text
        assert "Nightly backups" in reader.get("/wiki").text
        health = reader.get("/healthz").json()
        assert health["remote"]["error"] is None and health["remote"]["following"]

    # its search index took the article in (by path): a question's shortlist finds it
    from contextlib import closing

    from wiki import KnowledgeBase, open_state
    from wiki.search import SearchIndex

    with closing(open_state(KnowledgeBase.open(tmp_path / "reader"))) as conn:
        assert [h.path for h in SearchIndex(conn).search("nightly backups")] == [path]


def test_a_refusing_remote_shows_on_status_and_healthz_stays_up(tmp_path, model):
    remote = bare(tmp_path / "wiki.git")
    init_from_remote(tmp_path / "writer", str(remote))
    refuse_pushes(remote, "quota exceeded")
    compile_note(tmp_path / "writer", model, tmp_path, "backups",
                 "# Nightly backups\n\nBackups run nightly at 02:00.\n")  # fmt: skip

    with make_client(settings_of(tmp_path / "writer", wiki_follow_seconds=0.05), model,
                     start_worker=False) as server:  # fmt: skip
        health = server.get("/healthz")
        status = server.get("/status").text

    assert health.status_code == 200
    assert health.json()["ok"] is True
    remote_report = health.json()["remote"]
    assert remote_report["ahead"] == 1 and "quota exceeded" in remote_report["error"]
    assert 'id="remote"' in status and "quota exceeded" in status
    assert "1 commit not pushed yet" in status


def test_two_servers_made_by_init_remote_then_serve_share_the_wiki(tmp_path):
    """The scaled setup without containers: a new server is `kb-ai init` (with the
    remote in the environment, as compose.yaml sets it) then `kb-ai serve`; what is
    submitted to one is compiled there, pushed, and served by the other."""
    remote = bare(tmp_path / "wiki.git")
    with FakeOpenAIServer(respond) as model:
        servers = []
        try:
            for name in ("one", "two"):
                root = tmp_path / name
                env = {
                    **model_env(model.base_url, root),
                    "KB_AI_WIKI_REMOTE": str(remote),
                    "KB_AI_WIKI_FOLLOW_SECONDS": "0.2",
                }
                made = subprocess.run(
                    [sys.executable, "-m", "kb_ai", "init", "--no-hint"],
                    env={**os.environ, **env}, capture_output=True, text=True, check=False,
                )  # fmt: skip
                assert made.returncode == 0, made.stderr
                said = "pushed to" if name == "one" else "cloned from"
                assert f"{said} {remote}" in made.stdout
                servers.append(LiveServer(env, command=[
                    sys.executable, "-m", "kb_ai", "serve", "--host", "127.0.0.1"]))  # fmt: skip
            one, two = servers

            task = httpx.post(f"{one.url}/api/submit", json=NOTE).json()["tasks"][0]
            with httpx.Client(base_url=one.url) as client:
                done = wait_for(client, task["id"], timeout=30)
            assert done["state"] == "done", done["error"]
            (path,) = done["result"]["created"]

            page = wait_until(
                lambda: (r := httpx.get(f"{two.url}/{path}")).status_code == 200 and r
            )
            assert NOTE["title"] in page.text
            assert httpx.get(f"{two.url}/healthz").json()["remote"]["error"] is None
        finally:
            for server in servers:
                server.stop()
