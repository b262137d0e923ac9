"""Benchmark `kb-ai serve`: concurrent chat streams and a burst of submissions against the
fake model server with a fixed delay, measuring errors and the latency kb-ai adds.

    python -m bench.serve.run [--streams 50] [--submissions 200] [--delay 0.2] [--out FILE]

Added latency of a chat stream = its wall time minus the model's share (2 calls, select
and answer, each held ``--delay`` seconds by the fake). A submission involves no model:
its whole request time is kb-ai's own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.web.live import LiveServer, free_port
from wiki import KnowledgeBase

ROOT = Path(__file__).resolve().parents[2]
TOPICS = ["backups", "dns", "on-call", "release train", "vpn", "billing", "alerts", "runbooks"]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


async def one_stream(client: httpx.AsyncClient, question: str) -> tuple[float, float, str | None]:
    started = time.perf_counter()
    first = None
    last_event = None
    try:
        async with client.stream("POST", "/api/ask", json={"question": question}) as r:
            if r.status_code != 200:
                return time.perf_counter() - started, 0.0, f"HTTP {r.status_code}"
            async for line in r.aiter_lines():
                if first is None and line.startswith("event:"):
                    first = time.perf_counter() - started
                if line.startswith("event:"):
                    last_event = line.split(":", 1)[1].strip()
    except httpx.HTTPError as exc:
        return time.perf_counter() - started, 0.0, type(exc).__name__
    error = None if last_event == "done" else f"ended with {last_event}"
    return time.perf_counter() - started, first or 0.0, error


async def one_submit(client: httpx.AsyncClient, i: int) -> tuple[float, str | None, str]:
    topic = TOPICS[i % len(TOPICS)]
    body = {
        "title": f"Note {i} on {topic}",
        "content": f"# Note {i} on {topic}\n\nDecision {i}: the {topic} owner reviews it every {i % 7 + 1} days.\n",
    }
    started = time.perf_counter()
    try:
        r = await client.post("/api/submit", json=body)
    except httpx.HTTPError as exc:
        return time.perf_counter() - started, type(exc).__name__, ""
    took = time.perf_counter() - started
    if r.status_code != 202:
        return took, f"HTTP {r.status_code}", ""
    return took, None, r.json()["tasks"][0]["id"]


async def wait_all_done(client: httpx.AsyncClient, total: int, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        counts = (await client.get("/api/tasks")).json()["counts"]
        if counts["done"] + counts["failed"] >= total:
            return counts
        await asyncio.sleep(0.25)
    return counts


async def bench(url: str, streams: int, submissions: int, delay: float) -> dict:
    limits = httpx.Limits(max_connections=500, max_keepalive_connections=500)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        # seed: a few articles to answer from
        seed = [await one_submit(client, i) for i in range(len(TOPICS))]
        await wait_all_done(client, len(seed), 120)
        questions = [f"Who reviews the {TOPICS[i % len(TOPICS)]} notes?" for i in range(streams)]
        t0 = time.perf_counter()
        chat = await asyncio.gather(*(one_stream(client, q) for q in questions))
        chat_wall = time.perf_counter() - t0
        t0 = time.perf_counter()
        subs = await asyncio.gather(*(one_submit(client, 1000 + i) for i in range(submissions)))
        burst_wall = time.perf_counter() - t0
        counts = await wait_all_done(client, len(seed) + submissions, 600)
        compile_wall = time.perf_counter() - t0
    totals = [t for t, _, e in chat if e is None]
    added = [t - 2 * delay for t in totals]
    return {
        "delay_s": delay,
        "chat": {
            "streams": streams,
            "errors": sum(1 for *_, e in chat if e),
            "error_kinds": sorted({e for *_, e in chat if e}),
            "wall_s": round(chat_wall, 2),
            "total_p50_ms": round(pct(totals, 0.5) * 1000, 1),
            "total_p99_ms": round(pct(totals, 0.99) * 1000, 1),
            "added_p50_ms": round(pct(added, 0.5) * 1000, 1),
            "added_p99_ms": round(pct(added, 0.99) * 1000, 1),
            "first_event_p50_ms": round(pct([f for _, f, e in chat if e is None], 0.5) * 1000, 1),
        },
        "submit": {
            "requests": submissions,
            "errors": sum(1 for _, e, _ in subs if e),
            "error_kinds": sorted({e for _, e, _ in subs if e}),
            "burst_wall_s": round(burst_wall, 2),
            "p50_ms": round(pct([t for t, e, _ in subs if e is None], 0.5) * 1000, 1),
            "p99_ms": round(pct([t for t, e, _ in subs if e is None], 0.99) * 1000, 1),
            "compiled_all_s": round(compile_wall, 1),
            "final_counts": counts,
        },
    }


@contextmanager
def fake_model(delay: float) -> Iterator[str]:
    """The stand-in model server in a process of its own, answering every stage after
    ``delay`` seconds; yields its base URL, stops it after."""
    port = free_port()
    fake = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.openai_server", "--port", str(port), "--delay",
         str(delay), "--responder", "tests.fakes.kb_responder:respond"],
        cwd=ROOT, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        time.sleep(0.5)  # listening
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        fake.terminate()
        fake.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=50)
    parser.add_argument("--submissions", type=int, default=200)
    parser.add_argument(
        "--delay", type=float, default=0.2, help="seconds the fake holds each reply"
    )
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()
    with fake_model(args.delay) as model_url, tempfile.TemporaryDirectory() as tmp:
        kb = KnowledgeBase.init(Path(tmp) / "kb")
        env = {
            "KB_AI_DIR": str(kb.root), "KB_AI_MODEL": "openai/fake", "KB_AI_API_KEY": "x",
            "KB_AI_API_BASE": model_url, "KB_AI_MAX_CONCURRENCY": "100",
        }  # fmt: skip
        command = [sys.executable, "-m", "kb_ai", "serve", "--host", "127.0.0.1"]
        with LiveServer(env, command=command) as server:
            result = asyncio.run(bench(server.url, args.streams, args.submissions, args.delay))
    result["machine"] = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
