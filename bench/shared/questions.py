"""Questions answered per second by 1 and 3 `kb-ai serve` processes on one PostgreSQL
database (each server a clone of one wiki remote, with a work tree of its own), and by
one server on SQLite for comparison, against the stand-in model with a fixed delay.

    python -m bench.shared.questions [--questions 400] [--in-flight 24] [--delay 0.2]

A seed of notes is compiled once (pushed to a bare remote); each server is then made by
`kb-ai init --remote` (a clone, its search index built). The client keeps
``--in-flight`` questions open at once, handing them to the servers round-robin; each
question is one /api/ask stream read to its end (two model calls: select, answer).
Figures: questions/s over the whole set, and each question's p50/p99 seconds.
Needs a PostgreSQL server (``--server``): a database of its own per run, dropped after.
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
import uuid
from pathlib import Path

import httpx

from bench._common import REPO, load_average, machine
from bench.serve.run import TOPICS, fake_model, one_stream, pct
from tests.web.live import LiveServer


def _kb_ai(env: dict[str, str], *args: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "kb_ai", *args], env={**os.environ, **env},
                          capture_output=True, text=True, cwd=REPO)  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"bench: kb-ai {' '.join(args)} failed: {proc.stderr[-2000:]}")


def make_servers(tmp: Path, count: int, base: dict[str, str], notes: Path) -> list[dict]:
    """``count`` work trees on one bare remote, the seed compiled into the first."""
    remote = tmp / "wiki.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    envs = []
    for i in range(count):
        env = {**base, "KB_AI_DIR": str(tmp / f"kb-{i}"), "KB_AI_WIKI_REMOTE": str(remote)}
        _kb_ai(env, "init", "--no-hint")
        if i == 0:
            _kb_ai(env, "compile", str(notes))
        envs.append(env)
    return envs


async def ask_all(urls: list[str], questions: list[str], in_flight: int) -> dict:
    limits = httpx.Limits(max_connections=500, max_keepalive_connections=500)
    clients = [httpx.AsyncClient(base_url=u, timeout=300, limits=limits) for u in urls]
    gate = asyncio.Semaphore(in_flight)

    async def one(i: int, question: str):
        async with gate:
            return await one_stream(clients[i % len(clients)], question)

    try:
        started = time.perf_counter()
        done = await asyncio.gather(*(one(i, q) for i, q in enumerate(questions)))
        wall = time.perf_counter() - started
    finally:
        for client in clients:
            await client.aclose()
    ok = [total for total, _, error in done if error is None]
    return {
        "questions": len(questions),
        "errors": len(questions) - len(ok),
        "error_kinds": sorted({e for *_, e in done if e}),
        "wall_s": round(wall, 2),
        "per_s": round(len(ok) / wall, 2),
        "p50_s": round(pct(ok, 0.5), 2),
        "p99_s": round(pct(ok, 0.99), 2),
    }


def one_run(backend: str, servers: int, args: argparse.Namespace, model_url: str) -> dict:
    import psycopg

    name = f"kbai_bench_{uuid.uuid4().hex[:10]}"
    base = {
        "KB_AI_MODEL": "openai/fake", "KB_AI_API_KEY": "x", "KB_AI_API_BASE": model_url,
        "KB_AI_DETECT_MODEL": "0", "KB_AI_MAX_CONCURRENCY": "100",
        "KB_AI_WIKI_FOLLOW_SECONDS": "3", "PYTHONPATH": str(REPO),
    }  # fmt: skip
    for key in ("KB_AI_DATABASE_URL", "KB_AI_DIR", "KB_AI_WIKI_REMOTE"):
        os.environ.pop(key, None)
    if backend == "postgres":
        with psycopg.connect(f"{args.server}/postgres", autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        base["KB_AI_DATABASE_URL"] = f"{args.server}/{name}"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            notes = Path(tmp) / "notes"
            notes.mkdir()
            for i, topic in enumerate(TOPICS):
                (notes / f"{topic.replace(' ', '-')}.md").write_text(
                    f"# {topic.title()}\n\nThe {topic} notes are reviewed by team {i} "
                    f"every {i + 2} days.\n",
                    encoding="utf-8",
                )
            envs = make_servers(Path(tmp), servers, base, notes)
            command = [sys.executable, "-m", "kb_ai", "serve", "--host", "127.0.0.1"]
            live = [LiveServer(env, command=command) for env in envs]
            try:
                # each one different: the response cache answers none of them
                questions = [f"Who reviews the {TOPICS[i % len(TOPICS)]} notes (case {i})?"
                             for i in range(args.questions)]  # fmt: skip
                load = load_average()
                row = asyncio.run(ask_all([s.url for s in live], questions, args.in_flight))
            finally:
                for server in live:
                    server.stop()
    finally:
        if backend == "postgres":
            with psycopg.connect(f"{args.server}/postgres", autocommit=True) as admin:
                admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    return {"backend": backend, "servers": servers, "in_flight": args.in_flight,
            "delay_s": args.delay, **row, "load_before": load, "load_after": load_average()}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=400)
    parser.add_argument("--in-flight", type=int, default=24)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds per model reply")
    parser.add_argument("--runs", default="sqlite:1,postgres:1,postgres:3")
    parser.add_argument("--server", default="postgresql://root@127.0.0.1:5432")
    args = parser.parse_args()
    print(json.dumps({"machine": machine(), "load_before": load_average()}), flush=True)
    with fake_model(args.delay) as model_url:
        for run in args.runs.split(","):
            backend, count = run.split(":")
            row = one_run(backend, int(count), args, model_url)
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
