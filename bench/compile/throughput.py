"""Throughput and efficiency: one compile into a fresh knowledge base, timed, with where
its time went (from the fake server's arrival times); the median of several."""

from __future__ import annotations

import asyncio
import math
import shutil
import sqlite3
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from bench._common import load_average
from bench.compile.fake_model import DelayedResponder, FakeModelProcess, listen_overflows
from tests.fakes.openai_server import FakeOpenAIServer

CHAIN = 3  # calls one after another for a one-chunk source: extract -> classify -> write


@dataclass
class Run:
    label: str
    concurrency: int
    delay: float
    docs: int
    source_chars: int
    wall_s: float
    calls: int
    server_requests: int
    stages: dict[str, int]
    prompt_tokens: int
    completion_tokens: int
    prompt_chars: int
    compiled: int
    failed: int
    created: int
    max_in_flight: int
    arrivals: list[tuple[float, str, int]] = field(default_factory=list)
    started: float = 0.0
    cached_calls: int = 0
    overflows: int = 0
    load: float = 0.0
    walls: list[float] = field(default_factory=list)

    @property
    def ideal_s(self) -> float:
        """The lower bound for equal-length calls: max(ceil(N / C), chain) * d."""
        return max(math.ceil(self.calls / self.concurrency), CHAIN) * self.delay

    @property
    def fluid_ideal_s(self) -> float:
        """The fractional bound max(N * d / C, chain * d), which no schedule can reach
        unless C divides N."""
        return max(self.calls * self.delay / self.concurrency, CHAIN * self.delay)

    @property
    def efficiency(self) -> float:
        return self.ideal_s / self.wall_s if self.wall_s else 0.0

    @property
    def fluid_efficiency(self) -> float:
        return self.fluid_ideal_s / self.wall_s if self.wall_s else 0.0

    def per_doc(self, value: float) -> float:
        return value / self.docs if self.docs else 0.0

    def timeline(self) -> dict[str, float]:
        """Where the time went, from the server's arrival times (relative to the start)."""
        if not self.arrivals:
            return {}
        rel = [(t - self.started, s) for t, s, _ in self.arrivals]
        prep = [t for t, s in rel if s in ("extract", "classify")]
        write = [t for t, s in rel if s in ("write", "patch")]
        out = {"first_call_s": min(t for t, _ in rel)}
        # How long the run took to fill every slot once: a spread the later rounds keep
        # (each slot's next call follows its own reply), so the run ends that much later.
        starts = sorted(t for t, _ in rel)[: self.concurrency]
        out["first_round_spread_s"] = starts[-1] - starts[0]
        if prep:
            out["last_prepare_reply_s"] = max(prep) + self.delay
        if write:
            out["first_write_call_s"] = min(write)
            out["last_write_reply_s"] = max(write) + self.delay
            out["tail_after_last_reply_s"] = self.wall_s - out["last_write_reply_s"]
        if prep and write:
            out["barrier_gap_s"] = out["first_write_call_s"] - out["last_prepare_reply_s"]
        out["mean_in_flight"] = self.calls * self.delay / self.wall_s if self.wall_s else 0.0
        return out


def make_settings(kb_dir: Path, base_url: str, concurrency: int):
    from kb_ai.settings import load_settings

    return load_settings(
        kb_dir,
        {
            "model": "openai/fake",
            "api_base": base_url,
            "api_key": "x",
            "max_concurrency": concurrency,
        },
        environ={},
    )


def fresh_compiler(kb_dir: Path, base_url: str, concurrency: int):
    """A Compiler for a new knowledge base at ``kb_dir``, its model the fake at ``base_url``."""
    from compiler import Compiler
    from wiki import KnowledgeBase

    return Compiler(KnowledgeBase.init(kb_dir), make_settings(kb_dir, base_url, concurrency))


@contextmanager
def warm_fake(delay: float, paths: list[Path], work: Path) -> Iterator[FakeModelProcess]:
    """The fake model in a process of its own, after one small compile against it (its
    connections and the client's first imports are not timed)."""
    with FakeModelProcess(delay) as fake:
        compile_once("warmup", work, paths[:2], fake, fake, 4)
        yield fake


def compile_once(
    label: str,
    work: Path,
    paths: list[Path],
    server: FakeOpenAIServer,
    responder: DelayedResponder,
    concurrency: int,
) -> Run:
    """Compile paths into a fresh knowledge base and measure the whole run."""
    from compiler import Compiler
    from wiki import KnowledgeBase

    kb_dir = work / f"kb-{label}"
    if kb_dir.exists():
        shutil.rmtree(kb_dir)
    kb = KnowledgeBase.init(kb_dir)
    settings = make_settings(kb_dir, server.base_url, concurrency)
    server.max_in_flight = 0
    mark = responder.mark()
    load = load_average()
    overflows = listen_overflows()
    compiler = Compiler(kb, settings)
    started = time.monotonic()
    result = asyncio.run(compiler.compile_paths(paths))
    wall = time.monotonic() - started
    overflows = listen_overflows() - overflows
    arrivals = responder.since(mark)
    if result.failed:
        raise SystemExit(
            f"{label}: {len(result.failed)} source(s) failed: {result.failed[0].error}"
        )
    with closing(sqlite3.connect(kb.state_db)) as conn:
        cached = conn.execute("SELECT COUNT(*) FROM llm_calls WHERE cached = 1").fetchone()[0]
    return Run(
        label=label,
        concurrency=concurrency,
        delay=responder.delay,
        docs=len(paths),
        source_chars=sum(len(p.read_text(encoding="utf-8")) for p in paths),
        wall_s=wall,
        calls=result.usage.calls,
        server_requests=len(arrivals),
        stages=dict(Counter(s for _, s, _ in arrivals)),
        prompt_tokens=result.usage.prompt_tokens,
        completion_tokens=result.usage.completion_tokens,
        prompt_chars=sum(c for _, _, c in arrivals),
        compiled=len(result.compiled),
        failed=len(result.failed),
        created=len(result.created),
        max_in_flight=server.max_in_flight,
        arrivals=arrivals,
        started=started,
        cached_calls=cached,
        overflows=overflows,
        load=load,
        walls=[wall],
    )


def compile_median(
    label: str,
    work: Path,
    paths: list[Path],
    server: FakeOpenAIServer,
    responder: DelayedResponder,
    concurrency: int,
    repeats: int,
) -> Run:
    """The run with the median wall time of `repeats`, each into a fresh knowledge base."""
    runs = []
    for i in range(repeats):
        run = compile_once(f"{label}-{i}", work, paths, server, responder, concurrency)
        if run.calls != run.server_requests or run.cached_calls:
            raise SystemExit(
                f"{label}: {run.calls} calls counted, {run.server_requests} "
                f"reached the server, {run.cached_calls} cache hits"
            )
        shutil.rmtree(work / f"kb-{label}-{i}", ignore_errors=True)
        runs.append(run)
    runs.sort(key=lambda r: r.wall_s)
    median = runs[(len(runs) - 1) // 2]
    median.walls = sorted(r.wall_s for r in runs)
    median.overflows = sum(r.overflows for r in runs)
    median.label = label
    return median
