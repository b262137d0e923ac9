"""Malformed MCP messages get JSON-RPC errors (issue 24, item 6), never silence: a client
that sent a bad line must not wait forever for a reply to its id.

Over stdio through a raw client (`kb-ai mcp` as a child process, lines written by hand),
and over HTTP as `kb-ai serve` mounts it at /mcp."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading

import httpx2
import pytest

from wiki import KnowledgeBase

pytest.importorskip("mcp")

PARSE_ERROR, INVALID_REQUEST = -32700, -32600
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 9,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
# line -> (error code, id of the reply)
BAD_LINES = {
    "{not json": (PARSE_ERROR, None),
    '{"jsonrpc": "2.0", "id": 1, "method": "ping"': (PARSE_ERROR, None),  # cut short
    '{"jsonrpc": "2.0", "id": 7, "method": 5}': (INVALID_REQUEST, 7),
    '{"jsonrpc": "1.0", "id": "a", "method": "ping"}': (INVALID_REQUEST, "a"),
    '{"jsonrpc": "2.0", "id": true}': (INVALID_REQUEST, None),  # no usable id
    '[{"jsonrpc": "2.0", "id": 8, "method": "ping"}]': (INVALID_REQUEST, None),  # a batch
    '"ping"': (INVALID_REQUEST, None),
}


class RawClient:
    """`kb-ai mcp` with lines written to its stdin by hand and its replies read back."""

    def __init__(self, kb_root) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kb_ai", "mcp", "--kb", str(kb_root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        self.replies: queue.Queue = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.replies.put(json.loads(line))

    def send(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def reply(self) -> dict:
        try:
            return self.replies.get(timeout=30)
        except queue.Empty:
            raise AssertionError("no reply within 30 s: the client would wait forever") from None

    def close(self) -> tuple[int, str]:
        """Close stdin (the end of the session); the exit code and what went to stderr."""
        self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.reader.join(10)
            self.proc.stdout.close()
            errors = self.proc.stderr.read()
            self.proc.stderr.close()
        return code, errors


def test_stdio_answers_every_malformed_line_with_a_json_rpc_error_and_goes_on(tmp_path):
    kb = KnowledgeBase.init(tmp_path / "kb")
    client = RawClient(kb.root)
    try:
        for line, (code, request_id) in BAD_LINES.items():
            client.send(line)
            reply = client.reply()
            assert reply["jsonrpc"] == "2.0" and reply["id"] == request_id, (line, reply)
            assert reply["error"]["code"] == code, (line, reply)
        # the server still serves the same session: initialize, then a ping after a blank
        # line (which is skipped, not answered)
        client.send(json.dumps(INITIALIZE))
        ready = client.reply()
        assert ready["id"] == 9 and ready["result"]["serverInfo"]["name"] == "kb-ai"
        client.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        client.send("")
        client.send(json.dumps({"jsonrpc": "2.0", "id": 10, "method": "ping"}))
        assert client.reply() == {"jsonrpc": "2.0", "id": 10, "result": {}}
    finally:
        code, errors = client.close()
    assert code == 0, errors


def test_http_answers_malformed_bodies_with_json_rpc_errors(tmp_path):
    from kb_ai.cli.serve import mcp_mount
    from kb_ai.settings import load_settings
    from tests.kb_ai.test_mcp import TOKEN, serving
    from web import create_app

    kb = KnowledgeBase.init(tmp_path / "kb")
    settings = load_settings(kb.root)
    routes, lifespans = mcp_mount(settings)
    app = create_app(
        settings, token=TOKEN, start_worker=False, extra_routes=routes, extra_lifespans=lifespans
    )
    headers = {
        "Authorization": f"Bearer {TOKEN}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    with serving(app) as url:
        for body, (code, request_id) in BAD_LINES.items():
            response = httpx2.post(f"{url}/mcp", content=body, headers=headers, timeout=30)
            assert response.status_code == 400, (body, response.text)
            reply = response.json()
            assert reply["jsonrpc"] == "2.0" and reply["id"] == request_id, (body, reply)
            assert reply["error"]["code"] == code, (body, reply)
        # a well-formed request still reaches the server
        response = httpx2.post(f"{url}/mcp", json=INITIALIZE, headers=headers, timeout=30)
        assert response.json()["result"]["serverInfo"]["name"] == "kb-ai"
