"""The cost of a no-op re-run: every source already compiled, as a process (`kb-ai
compile`) and in process."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench.compile.corpus import synthetic_notes
from bench.compile.fake_model import DelayedResponder
from bench.compile.throughput import make_settings
from tests.fakes.openai_server import FakeOpenAIServer


@dataclass
class Noop:
    sources: int
    seed_wall_s: float
    seed_calls: int
    process_s: list[float]
    process_calls: list[int]
    process_skipped: list[int]
    server_requests_during: int
    in_process_s: list[float]
    in_process_calls: list[int]
    python_startup_s: float
    help_s: float

    @property
    def process_median(self) -> float:
        return statistics.median(self.process_s)


def noop_rerun(
    work: Path,
    server: FakeOpenAIServer,
    responder: DelayedResponder,
    count: int,
    repeats: int,
) -> Noop:
    from compiler import Compiler
    from wiki import KnowledgeBase

    notes = work / "noop-notes"
    synthetic_notes(notes, count, seed=11)
    kb_dir = work / "kb-noop"
    kb = KnowledgeBase.init(kb_dir)
    saved, responder.delay = responder.delay, 0.0
    try:
        started = time.monotonic()
        seed = asyncio.run(
            Compiler(kb, make_settings(kb_dir, server.base_url, 16)).compile_paths([notes])
        )
        seed_wall = time.monotonic() - started
    finally:
        responder.delay = saved
    if seed.failed or len(seed.compiled) != count:
        raise SystemExit(f"no-op seed: {len(seed.compiled)} compiled, {len(seed.failed)} failed")

    env = {k: v for k, v in os.environ.items() if not k.startswith("KB_AI_")}
    env.update(KB_AI_MODEL="openai/fake", KB_AI_API_BASE=server.base_url, KB_AI_API_KEY="x")
    kb_ai = shutil.which("kb-ai", path=str(Path(sys.executable).parent)) or "kb-ai"
    command = [kb_ai, "--kb", str(kb_dir), "compile", str(notes), "--json", "--concurrency", "16"]
    mark = responder.mark()
    process_s, calls, skipped = [], [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        proc = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        process_s.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            raise SystemExit(f"no-op kb-ai compile exited {proc.returncode}: {proc.stderr[-2000:]}")
        out = json.loads(proc.stdout)
        calls.append(out["usage"]["calls"])
        skipped.append(len(out["skipped"]))
    during = len(responder.since(mark))

    in_process_s, in_calls = [], []
    for _ in range(repeats):
        settings = make_settings(kb_dir, server.base_url, 16)
        t0 = time.perf_counter()
        res = asyncio.run(Compiler(KnowledgeBase.open(kb_dir), settings).compile_paths([notes]))
        in_process_s.append(time.perf_counter() - t0)
        in_calls.append(res.usage.calls)

    def timed(cmd: list[str]) -> float:
        runs = []
        for _ in range(3):
            t0 = time.perf_counter()
            subprocess.run(cmd, capture_output=True, env=env, check=True)
            runs.append(time.perf_counter() - t0)
        return statistics.median(runs)

    return Noop(
        sources=count,
        seed_wall_s=seed_wall,
        seed_calls=seed.usage.calls,
        process_s=process_s,
        process_calls=calls,
        process_skipped=skipped,
        server_requests_during=during,
        in_process_s=in_process_s,
        in_process_calls=in_calls,
        python_startup_s=timed([sys.executable, "-c", "pass"]),
        help_s=timed([kb_ai, "--help"]),
    )
