"""Benchmark: what wrong bearer tokens cost the server, before and after the per-address
limit (web/auth.py, web/sessions.py FREE_TOKEN_FAILURES).

    python -m bench.serve.wrong_tokens [--requests 60]

Starts a real `kb-ai serve` on loopback over a fresh knowledge base with one person,
then sends ``--requests`` requests one after another, each with a wrong token under the
person's (known) token id: each one the server checks costs an scrypt hash. Prints, for
the checked (401) and the refused-early (429) requests, their count, the server's CPU
seconds per request (from /proc/<pid>/stat) and the median wall time; then whether the
person's good token, used before, still answers from the same address.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

from kb_ai.service import open_kb, people
from tests.web.live import LiveServer
from wiki import KnowledgeBase


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        kb = KnowledgeBase.init(Path(tmp) / "kb")
        env = {
            "KB_AI_DIR": str(kb.root),
            "KB_AI_MODEL": "openai/none",
            "KB_AI_API_BASE": "http://127.0.0.1:9",
        }
        command = [
            sys.executable,
            "-m",
            "kb_ai",
            "--kb",
            str(kb.root),
            "serve",
            "--host",
            "127.0.0.1",
        ]
        with LiveServer(env, command=command) as live, httpx.Client(base_url=live.url) as client:
            # added once it serves (its readiness check, /healthz, then needs a token)
            _, good = people.add(open_kb(kb.root, detect=False), "Rita Reader", "reader")
            token_id = good.split(".")[0]
            assert (
                client.get("/api/tasks", headers={"authorization": f"Bearer {good}"}).status_code
                == 200
            )
            by_status: dict[int, list[tuple[float, float]]] = {}
            for n in range(args.requests):
                cpu, start = cpu_seconds(live.proc.pid), time.perf_counter()
                reply = client.get(
                    "/api/tasks", headers={"authorization": f"Bearer {token_id}.x{n}"}
                )
                wall = time.perf_counter() - start
                by_status.setdefault(reply.status_code, []).append(
                    (cpu_seconds(live.proc.pid) - cpu, wall)
                )
            still = client.get(
                "/api/tasks", headers={"authorization": f"Bearer {good}"}
            ).status_code
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (1 min), {os.cpu_count()} CPUs")
    for status, rows in sorted(by_status.items()):
        cpu = sum(c for c, _ in rows) / len(rows)
        wall = statistics.median(w for _, w in rows)
        print(
            f"{status}: {len(rows)} requests, server CPU {cpu * 1000:.1f} ms each, median wall {wall * 1000:.1f} ms"
        )
    print(f"the good token from the same address afterwards: {still}")


if __name__ == "__main__":
    main()
