"""What a `kb-ai serve` prints while its shared database is away: one line when it stops
answering and one when it is back, not a warning (or a traceback) at every try of the
connection pool and the compile workers to reconnect."""

import os
import subprocess
import sys
import time

import httpx

from tests.fakes.kb_responder import respond
from tests.fakes.openai_server import FakeOpenAIServer
from tests.shared.proxy import TcpProxy
from tests.web.live import LiveServer, model_env


def test_the_database_away_and_back_is_said_once_each(tmp_path, pg_url):
    proxy = TcpProxy(("127.0.0.1", 5432))
    proxy.start()
    root = tmp_path / "kb"
    with FakeOpenAIServer(respond) as model:
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
            proxy.stop()  # away long enough for the pool and the workers to try many times
            for _ in range(3):
                assert httpx.get(f"{url}/api/tasks", timeout=30).status_code == 503
            time.sleep(12)
            proxy.start()
            deadline = time.monotonic() + 30
            while httpx.get(f"{url}/api/tasks", timeout=30).status_code != 200:
                assert time.monotonic() < deadline, server.output()
                time.sleep(0.2)
            time.sleep(2)  # the workers' next round, after the database came back
            said = server.output()
        finally:
            server.stop()
            proxy.stop()
    lines = [line for line in said.splitlines() if line.strip()]
    away = [line for line in lines if "does not answer" in line]
    back = [line for line in lines if "answers again" in line]
    assert len(away) == 1 and len(back) == 1, said
    assert "kb-ai reconnects by itself" in away[0]
    assert "Traceback" not in said and "error connecting" not in said, said
    assert not [line for line in lines if "compile worker" in line], said
    # nothing else about the database but the server's start line
    assert len(lines) <= 3, said
