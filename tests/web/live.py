"""Real servers in subprocesses, for the restart and browser tests.

``python -m uvicorn --factory tests.web.live:build_app`` builds the app from the
environment (KB_AI_DIR, KB_AI_MODEL, ...) with a short lease, so a test can kill a
server mid-compile and see the next one pick its task up within a second or two.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from kb_ai.settings import load_settings
from web import create_app

ROOT = Path(__file__).resolve().parents[2]


def build_app():
    lease = float(os.environ.get("KB_AI_TEST_LEASE", "600"))
    return create_app(load_settings(), worker_lease_seconds=lease, worker_poll_seconds=0.1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    """A server process on a free loopback port; ``kill()`` is a crash, ``stop()`` a Ctrl-C."""

    def __init__(
        self,
        env: dict[str, str],
        *,
        command: list[str] | None = None,
        ready_headers: dict[str, str] | None = None,
    ) -> None:
        """``ready_headers``: what the readiness check of /healthz sends (a token, when
        the server requires one from the start)."""
        self.ready_headers = ready_headers or {}
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 (closed in kill/stop)
        args = command or [
            sys.executable, "-m", "uvicorn", "--factory", "tests.web.live:build_app",
            "--host", "127.0.0.1", "--log-level", "warning",
        ]  # fmt: skip
        self.proc = subprocess.Popen(
            [*args, "--port", str(self.port)],
            cwd=ROOT,
            env={**os.environ, **env},
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        self._wait_ready()

    def _wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.output()}")
            try:
                ready = httpx.get(f"{self.url}/healthz", headers=self.ready_headers, timeout=1)
                if ready.status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.kill()
        raise RuntimeError("server did not start in time")

    def output(self) -> str:
        self._log.seek(0)
        return self._log.read().decode(errors="replace")

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)
        self._log.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()

    def __enter__(self) -> LiveServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def model_env(base_url: str, kb_dir: Path) -> dict[str, str]:
    return {
        "KB_AI_DIR": str(kb_dir),
        "KB_AI_MODEL": "openai/fake",
        "KB_AI_API_BASE": base_url,
        "KB_AI_API_KEY": "x",
        "KB_AI_RETRY_BACKOFF": "0.01",
        # the coverage judge off, as tests/conftest.py has it for every test (a server a
        # module-scoped fixture starts sees the environment before that fixture runs)
        "KB_AI_COVERAGE_JUDGE": "off",
    }
