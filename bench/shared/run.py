"""Submissions compiled per second with 1, 2 and 4 `kb-ai worker` processes sharing one
knowledge base, on SQLite (state.db) and on PostgreSQL (database_url), against the
stand-in model with a fixed delay per reply.

    python -m bench.shared.run [--docs 16] [--delay 0.2] [--batch 4] [--workers 1,2,4]

Every submission is queued first, then the workers start; the clock runs from their start
to the last task done. Latency per task: from the workers' start to its task finishing.
Needs a PostgreSQL server (``--server``, default postgresql://root@127.0.0.1:5432): a
database of its own is made for each run and dropped.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import closing
from datetime import datetime
from pathlib import Path

from bench._common import REPO, load_average, machine
from bench.compile.fake_model import DelayedResponder
from tests.fakes.openai_server import FakeOpenAIServer

TOPICS = [
    "release train", "on call rota", "backup policy", "incident review", "code freeze",
    "feature flags", "access reviews", "cost reports", "design reviews", "hiring loop",
    "load tests", "data retention", "vendor audits", "security drills", "launch checklist",
    "api versioning", "status page", "runbooks", "capacity plan", "team charter",
]  # fmt: skip


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def one_run(backend: str, workers: int, docs: int, batch: int, base_url: str, server: str) -> dict:
    import psycopg

    from compiler.queue import TaskQueue
    from wiki import KnowledgeBase, open_state
    from wiki.database import ENV, forget_databases

    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "KB_AI_MODEL": "openai/fake-model",
        "KB_AI_API_BASE": base_url,
        "KB_AI_API_KEY": "sk-bench",
        "KB_AI_DETECT_MODEL": "0",
    }
    env.pop(ENV, None)
    name = f"kbai_bench_{uuid.uuid4().hex[:10]}"
    with tempfile.TemporaryDirectory() as tmp:
        kb = KnowledgeBase.init(Path(tmp) / "kb")
        if backend == "postgres":
            with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
                admin.execute(f"CREATE DATABASE {name}")
            env[ENV] = os.environ[ENV] = f"{server}/{name}"
        try:
            with closing(open_state(kb)) as conn:
                queue = TaskQueue(kb, conn)
                for i in range(docs):
                    topic = TOPICS[i % len(TOPICS)] + (f" {i}" if i >= len(TOPICS) else "")
                    body = f"# {topic.title()}\n\nThe {topic} is owned by the platform team.\n"
                    queue.submit(topic.title(), body.encode())
            started = time.time()
            procs = [
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "kb_ai",
                        "--kb",
                        str(kb.root),
                        "worker",
                        "--batch",
                        str(batch),
                    ],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )  # fmt: skip
                for _ in range(workers)
            ]
            try:
                while True:
                    with closing(open_state(kb)) as conn:
                        tasks = TaskQueue(kb, conn).list(limit=10_000)
                    if all(t["state"] in ("done", "failed") for t in tasks):
                        break
                    if time.time() - started > 600:
                        raise SystemExit("bench: the workers did not finish in 10 minutes")
                    time.sleep(0.1)
            finally:
                for p in procs:
                    p.send_signal(signal.SIGINT)
                for p in procs:
                    try:
                        p.wait(60)
                    except subprocess.TimeoutExpired:
                        p.kill()
                        p.wait()
        finally:
            if backend == "postgres":
                os.environ.pop(ENV, None)
                forget_databases()
                with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
                    admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    ends = [datetime.fromisoformat(t["updated_at"]).timestamp() for t in tasks]
    wall = max(ends) - started
    latency = [e - started for e in ends]
    return {
        "backend": backend,
        "workers": workers,
        "docs": docs,
        "done": sum(t["state"] == "done" for t in tasks),
        "wall_s": round(wall, 2),
        "per_s": round(docs / wall, 2),
        "p50_s": round(statistics.median(latency), 2),
        "p99_s": round(_percentile(latency, 0.99), 2),
        "load": round(load_average(), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=16)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds per model reply")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--server", default="postgresql://root@127.0.0.1:5432")
    args = parser.parse_args()
    print(json.dumps({"machine": machine(), "load_before": load_average()}), flush=True)
    with FakeOpenAIServer(DelayedResponder(args.delay)) as model:
        for backend in args.backends.split(","):
            for n in (int(w) for w in args.workers.split(",")):
                row = one_run(backend, n, args.docs, args.batch, model.base_url, args.server)
                print(json.dumps({**row, "delay_s": args.delay, "batch": args.batch}), flush=True)


if __name__ == "__main__":
    main()
