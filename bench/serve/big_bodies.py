"""Benchmark: the server's peak memory while oversized JSON submissions arrive.

    python -m bench.serve.big_bodies [--clients 8] [--mb 99]

Starts a real server on loopback (tests/web/live.py, default limits: 5 MB a document)
over a fresh knowledge base; ``--clients`` clients at once each send one JSON
submission whose text is ``--mb`` MB, chunked (no Content-Length, so the server cannot
refuse it from the header). Prints each answer's status, the server's peak resident
memory (VmHWM) and the wall time. No model is involved: every body is refused.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from tests.web.live import LiveServer
from wiki import KnowledgeBase


def body(mb: int) -> Iterator[bytes]:
    yield b'{"title": "big", "content": "'
    chunk = b"a" * 1_000_000
    for _ in range(mb):
        yield chunk
    yield b'"}'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--mb", type=int, default=99)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        kb = KnowledgeBase.init(Path(tmp) / "kb")
        env = {"KB_AI_DIR": str(kb.root), "KB_AI_MODEL": "openai/none",
               "KB_AI_API_BASE": "http://127.0.0.1:9/v1", "KB_AI_API_KEY": "x"}  # fmt: skip
        with LiveServer(env) as server:
            statuses: list[object] = []

            def post() -> None:
                try:
                    r = httpx.post(f"{server.url}/api/submit", content=body(args.mb),
                                   headers={"content-type": "application/json"}, timeout=600)  # fmt: skip
                    statuses.append(r.status_code)
                except httpx.HTTPError as exc:
                    statuses.append(type(exc).__name__)

            started = time.monotonic()
            threads = [threading.Thread(target=post) for _ in range(args.clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall = time.monotonic() - started
            status = Path(f"/proc/{server.proc.pid}/status").read_text()
            peak_kb = int(next(x for x in status.splitlines() if x.startswith("VmHWM")).split()[1])
    print(f"{args.clients} x {args.mb} MB JSON: answers {sorted(map(str, statuses))}, "
          f"server peak RSS {peak_kb // 1024} MB, {wall:.1f} s")  # fmt: skip


if __name__ == "__main__":
    main()
