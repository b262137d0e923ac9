"""The compile benchmark's model: tests/fakes' OpenAI-compatible server answering every
stage with kb_responder's JSON after a fixed delay, in a thread of the bench or in a
process of its own."""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.fakes import kb_responder
from tests.fakes.openai_server import FakeOpenAIServer, Reply


class DelayedResponder:
    """kb_responder with a fixed delay per reply, and a record of what was asked when."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self._lock = threading.Lock()
        self.log: list[tuple[float, str, int]] = []  # (arrival, stage, prompt chars)

    def __call__(self, request: dict[str, Any]) -> Reply:
        stage = kb_responder.stage_of(request)
        chars = sum(len(m.get("content") or "") for m in request.get("messages", []))
        with self._lock:
            self.log.append((time.monotonic(), stage, chars))
        reply = kb_responder.respond(request)
        return Reply(reply.content, delay=self.delay) if self.delay else reply

    def mark(self) -> int:
        with self._lock:
            return len(self.log)

    def since(self, mark: int) -> list[tuple[float, str, int]]:
        with self._lock:
            return list(self.log[mark:])


def widen_backlog(server: FakeOpenAIServer, backlog: int = 128) -> None:
    """The fake's ThreadingHTTPServer listens with socketserver's default backlog of 5:
    16 connections opened at once overflow it, and the dropped ones are retried by TCP
    after about 1 s, which the bench would count against the compiler. Listening again
    on the bound socket raises the backlog."""
    server._httpd.socket.listen(backlog)


class FakeModelProcess:
    """The fake model (FakeOpenAIServer + DelayedResponder) in a process of its own, as a
    model server is. In a thread of the bench it shares the compiler's GIL: its request
    handling then holds up the compiler's event loop, a cost no real deployment pays
    (bench.compile.diagnose compares both). Offers what the bench uses of both objects:
    base_url, delay, max_in_flight, mark() and since(); arrival times are
    time.monotonic(), which is one clock for every process on Linux."""

    def __init__(self, delay: float, backlog: int = 128) -> None:
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve_fake, args=(child, delay, backlog), daemon=True)
        self._proc.start()
        self.base_url: str = self._conn.recv()
        self._delay = delay

    def _ask(self, *command: Any) -> Any:
        self._conn.send(command)
        return self._conn.recv()

    @property
    def delay(self) -> float:
        return self._delay

    @delay.setter
    def delay(self, value: float) -> None:
        self._delay = self._ask("delay", value)

    @property
    def max_in_flight(self) -> int:
        return self._ask("max_in_flight")

    @max_in_flight.setter
    def max_in_flight(self, value: int) -> None:
        self._ask("set_max_in_flight", value)

    def mark(self) -> int:
        return self._ask("mark")

    def since(self, mark: int) -> list[tuple[float, str, int]]:
        return self._ask("since", mark)

    def close(self) -> None:
        if self._proc.is_alive():
            self._ask("stop")
        self._proc.join(timeout=10)

    def __enter__(self) -> FakeModelProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _serve_fake(conn: Any, delay: float, backlog: int) -> None:
    """The fake model's process: serve, and answer the bench's questions on ``conn``."""
    responder = DelayedResponder(delay)
    with FakeOpenAIServer(responder) as server:
        if backlog:
            widen_backlog(server, backlog)
        conn.send(server.base_url)
        while True:
            command, *args = conn.recv()
            if command == "stop":
                conn.send(None)
                return
            if command == "delay":
                responder.delay = args[0]
                conn.send(responder.delay)
            elif command == "max_in_flight":
                conn.send(server.max_in_flight)
            elif command == "set_max_in_flight":
                server.max_in_flight = args[0]
                conn.send(None)
            elif command == "mark":
                conn.send(responder.mark())
            elif command == "since":
                conn.send(responder.since(args[0]))


def listen_overflows() -> int:
    """The kernel's count of connections dropped because a listen queue was full."""
    try:
        lines = Path("/proc/net/netstat").read_text().splitlines()
    except OSError:
        return 0
    for head, values in zip(lines[::2], lines[1::2], strict=False):
        names, numbers = head.split(), values.split()
        if names[0] == "TcpExt:" and "ListenOverflows" in names:
            return int(numbers[names.index("ListenOverflows")])
    return 0


@contextmanager
def fake_model(args: argparse.Namespace) -> Iterator[tuple[Any, Any]]:
    """(server, responder) of the fake model, where --fake-in says it runs."""
    if args.fake_in == "process":
        with FakeModelProcess(args.delay, args.fake_backlog) as fake:
            yield fake, fake
        return
    responder = DelayedResponder(args.delay)
    with FakeOpenAIServer(responder) as server:
        if args.fake_backlog:
            widen_backlog(server, args.fake_backlog)
        yield server, responder
