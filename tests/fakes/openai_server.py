"""A stand-in model server on loopback that speaks the OpenAI chat-completions wire format.

Real HTTP, so the tests exercise litellm and the httpx transport end to end::

    with FakeOpenAIServer() as server:
        server.queue(Reply(status=500), Reply('{"paths": ["a.md"]}'))
        settings = replace(settings, model="openai/fake", api_base=server.base_url)
        ...
        assert len(server.requests) == 2

Also a script, for benchmarks::

    python -m tests.fakes.openai_server --port 8099 --delay 0.5 [--responder module:function]
"""

from __future__ import annotations

import argparse
import importlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PATHS = ("/v1/chat/completions", "/chat/completions")


@dataclass(frozen=True)
class Reply:
    """What the server answers to one request."""

    content: str = ""
    status: int = 200
    # Seconds from the request's arrival (its headers read) to the answer's first byte:
    # the fake's own reading, parsing and responding happen within it, so a benchmark
    # charges the client only for what the client does.
    delay: float = 0.0
    finish_reason: str = "stop"
    body: str | None = None  # raw body to send instead of the generated one
    drop: bool = False  # close the connection without answering
    headers: tuple[tuple[str, str], ...] = ()  # extra response headers (Retry-After, ...)
    hang: bool = False  # never answer: hold the request until the server stops
    # Close the connection after this many bytes of the body (headers announce it whole):
    # a connection lost mid-reply. For a stream, after this many events.
    cut_at: int | None = None


Responder = Callable[[dict[str, Any]], Reply]


def echo_ok(request: dict[str, Any]) -> Reply:
    return Reply("ok")


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        arrived = time.monotonic()
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path
        if "://" in path:  # absolute form: the client sent it through us as its proxy
            self.server.fake.proxied.append(path)
            path = "/" + path.split("://", 1)[1].partition("/")[2]
        if path.split("?")[0] not in PATHS:
            self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}))
            return
        try:
            request = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send(400, json.dumps({"error": {"message": "invalid JSON body"}}))
            return
        fake = self.server.fake
        reply = fake._take(request)
        plain = reply.status == 200 and reply.body is None and not request.get("stream")
        completion = json.dumps(self._completion(request, reply)) if plain else ""
        fake._enter()
        try:
            if reply.hang:
                fake._stopping.wait()
                self.close_connection = True
                return
            if reply.delay:
                time.sleep(max(0.0, reply.delay - (time.monotonic() - arrived)))
            if reply.drop:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if reply.status != 200 or reply.body is not None:
                body = reply.body
                if body is None:
                    body = json.dumps(
                        {
                            "error": {
                                "message": f"fake error {reply.status}",
                                "type": "fake",
                                "code": reply.status,
                            }
                        }
                    )
                self._send(reply.status, body, reply)
            elif request.get("stream"):
                self._stream(request, reply)
            else:
                self._send(200, completion, reply)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            fake._leave()

    def _send(self, status: int, body: str, reply: Reply | None = None) -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in reply.headers if reply else ():
            self.send_header(name, value)
        self.end_headers()
        if reply is not None and reply.cut_at is not None:
            self.wfile.write(data[: reply.cut_at])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(data)

    def _completion(self, request: dict[str, Any], reply: Reply) -> dict[str, Any]:
        prompt = _tokens(json.dumps(request.get("messages", [])))
        done = _tokens(reply.content)
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.content},
                    "finish_reason": reply.finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": done,
                "total_tokens": prompt + done,
            },
        }

    def _stream(self, request: dict[str, Any], reply: Reply) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        base = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": request.get("model", "fake"),
        }
        pieces = [reply.content[i : i + 4] for i in range(0, len(reply.content), 4)]
        if reply.cut_at is not None:  # the connection is lost after a few events
            for piece in pieces[: reply.cut_at]:
                chunk = {**base, "choices": [{"index": 0, "delta": {"content": piece}}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            return

        def event(payload: dict[str, Any]) -> None:
            self.wfile.write(f"data: {json.dumps(payload)}\n\n".encode())
            self.wfile.flush()

        event(
            {
                **base,
                "choices": [
                    {
                        "index": 0,
                        "delta": {"role": "assistant", "content": ""},
                        "finish_reason": None,
                    }
                ],
            }
        )
        for piece in pieces:
            event(
                {
                    **base,
                    "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}],
                }
            )
        event(
            {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": reply.finish_reason}]}
        )
        if (request.get("stream_options") or {}).get("include_usage"):
            prompt = _tokens(json.dumps(request.get("messages", [])))
            done = _tokens(reply.content)
            event(
                {
                    **base,
                    "choices": [],
                    "usage": {
                        "prompt_tokens": prompt,
                        "completion_tokens": done,
                        "total_tokens": prompt + done,
                    },
                }
            )
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5 drops connections when 16 calls open at once,
    # and TCP retries them a second later: a benchmark would blame the compiler.
    request_queue_size = 128
    fake: FakeOpenAIServer


class FakeOpenAIServer:
    """An OpenAI-compatible server in a background thread; use as a context manager."""

    def __init__(
        self, responder: Responder | None = None, *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.responder: Responder = responder or echo_ok
        self._lock = threading.Lock()
        self._requests: list[dict[str, Any]] = []
        self._queued: deque[Reply] = deque()
        self._stopping = threading.Event()  # releases requests held by Reply(hang=True)
        self.arrivals: list[float] = []  # time.monotonic() of each request, in order
        self.in_flight = 0
        self.max_in_flight = 0
        self.proxied: list[str] = []  # absolute request targets: we were used as a proxy
        self._httpd = _Server((host, port), _Handler)
        self._httpd.fake = self
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The JSON bodies received so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    def queue(self, *replies: Reply | str) -> None:
        """Script the next replies, in order; after them the responder answers again."""
        with self._lock:
            self._queued.extend(Reply(r) if isinstance(r, str) else r for r in replies)

    def _take(self, request: dict[str, Any]) -> Reply:
        with self._lock:
            self._requests.append(request)
            self.arrivals.append(time.monotonic())
            if self._queued:
                return self._queued.popleft()
        return self.responder(request)

    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def start(self) -> FakeOpenAIServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _load_responder(dotted: str) -> Responder:
    module, _, name = dotted.partition(":")
    return getattr(importlib.import_module(module), name)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="A fake OpenAI-compatible model server.")
    parser.add_argument("--port", type=int, default=8099)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each reply")
    parser.add_argument(
        "--responder",
        help="module:function taking the request JSON, returning a Reply (default: answer 'ok')",
    )
    args = parser.parse_args(argv)
    inner = _load_responder(args.responder) if args.responder else echo_ok

    def responder(request: dict[str, Any]) -> Reply:
        reply = inner(request)
        return reply if reply.delay or not args.delay else _with_delay(reply, args.delay)

    server = FakeOpenAIServer(responder, host=args.host, port=args.port)
    print(f"fake OpenAI server on http://{args.host}:{server.port}/v1", flush=True)
    try:
        server._httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server._httpd.server_close()


def _with_delay(reply: Reply, delay: float) -> Reply:
    return replace(reply, delay=delay)


if __name__ == "__main__":
    main()
