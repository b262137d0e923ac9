"""Compile benchmark: throughput and efficiency against a model that answers after a
fixed delay, model use per document, and the cost of a no-op re-run.

    python -m bench.compile.run            # full run, writes docs/benchmarks-compile.md
    python -m bench.compile.run --quick    # smoke run (short delay, fewer no-op sources), prints only

The model is tests/fakes' OpenAI-compatible server (real HTTP, TCP_NODELAY) answering
every stage with kb_responder's JSON after a fixed delay; the pipeline is the real one,
through the same default LLM client the CLI uses. Every concurrency level compiles into
a fresh knowledge base (fresh state.db, so the response cache is empty), and the bench
checks that every call reached the server.

The corpus is the decision records in --adr-dir (read in place, never copied); with
--synthetic N, N generated notes are added to it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.fakes import kb_responder
from tests.fakes.openai_server import FakeOpenAIServer, Reply

REPO = Path(__file__).resolve().parents[2]
ADR_DIR = Path("/work/shared/data/adr_govuk")
DOC = REPO / "docs" / "benchmarks-compile.md"
CHAIN = 3  # calls one after another for a one-chunk source: extract -> classify -> write

TARGET_EFFICIENCY = 0.9
TARGET_CALLS_ONE_DOC = 3
TARGET_NOOP_S = 2.0


# -- the fake model ------------------------------------------------------------------


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


def load_average() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


# -- corpus ----------------------------------------------------------------------------


def adr_files(adr_dir: Path) -> list[Path]:
    files = sorted(p for p in adr_dir.glob("*.md") if p.name.upper() != "README.MD")
    if not files:
        raise SystemExit(f"no decision records (*.md) in {adr_dir}")
    return files


WORDS = (  # noqa: SIM905 (a sentence reads better than 32 quoted words)
    "deploy queue cache index schema backup replica latency budget owner review release "
    "rollback incident alert dashboard tenant quota token session migration partition "
    "endpoint gateway proxy certificate secret rotation cluster region failover archive"
).split()


def synthetic_notes(directory: Path, count: int, seed: int = 7) -> list[Path]:
    """Small distinct notes (a heading, a decision, a few facts, a list), one per file."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        a, b, c = rng.sample(WORDS, 3)
        lines = [
            f"# Note {i:04d}: {a} and {b}",
            "",
            f"We decided to move the {a} of service {i} behind the {b}, because the {c} "
            f"was slow during week {rng.randint(1, 52)}.",
            f"The {b} now handles about {rng.randint(10, 990)} requests per second.",
            f"Owner of the {a} work is team {rng.choice('ABCDEFGH')}{rng.randint(1, 9)}.",
            "",
            "Steps agreed:",
            "",
            *(f"- {w} the {rng.choice(WORDS)}" for w in rng.sample(WORDS, 3)),
            "",
        ]
        path = directory / f"note-{i:04d}.md"
        path.write_text("\n".join(lines), encoding="utf-8")
        paths.append(path)
    return paths


# -- one compile -----------------------------------------------------------------------


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


# -- one note into a large wiki --------------------------------------------------------------


@dataclass
class IntoWiki:
    articles: int
    delay: float
    first_s: float  # the first compile after the articles were copied in (full catalog read)
    walls: list[float] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)
    first_call_s: list[float] = field(default_factory=list)
    tail_s: list[float] = field(default_factory=list)


def into_large_wiki(work: Path, server: Any, responder: Any, size: int, repeats: int) -> IntoWiki:
    """A grown wiki (bench/ask's synthetic one, committed to git), then one new note at
    a time compiled into it: what a run costs beside its model calls at that size."""
    from bench.ask.run import build_wiki
    from compiler import Compiler
    from wiki import KnowledgeBase, commit_all

    kb_dir = work / f"kb-wiki-{size}"
    shutil.copytree(
        build_wiki(size),
        kb_dir,
        ignore=shutil.ignore_patterns(".bench-complete.json", "questions.json"),
    )
    kb = KnowledgeBase.open(kb_dir)
    commit_all(kb, f"{size} synthetic articles")
    notes = work / "into-wiki-notes"
    notes.mkdir()

    def one(i: int) -> tuple[float, int, float, float]:
        """(wall, calls, first request at, time after the last reply) of one new note."""
        note = notes / f"rollout-{i}.md"
        note.write_text(
            f"# Rollout {i} of the billing service\n\nWe decided to roll out billing "
            f"v{i} on Mondays only, after the {i}th incident review.\n",
            encoding="utf-8",
        )
        mark = responder.mark()
        compiler = Compiler(kb, make_settings(kb_dir, server.base_url, 16))
        started = time.monotonic()
        result = asyncio.run(compiler.compile_paths([note]))
        wall = time.monotonic() - started
        if result.failed or len(result.compiled) != 1:
            raise SystemExit(f"into a {size}-article wiki: {result.failed}")
        arrivals = [t - started for t, _, _ in responder.since(mark)]
        last_reply = max(arrivals) + responder.delay
        return wall, result.usage.calls, min(arrivals), wall - last_reply

    out = IntoWiki(size, responder.delay, one(0)[0])
    for i in range(1, repeats + 1):
        wall, calls, first_call, tail = one(i)
        out.walls.append(wall)
        out.calls.append(calls)
        out.first_call_s.append(first_call)
        out.tail_s.append(tail)
    return out


# -- no-op re-run ------------------------------------------------------------------------


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


# -- report --------------------------------------------------------------------------------


def machine() -> dict[str, str]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        from importlib.metadata import version

        litellm_version = version("litellm")
    except Exception:  # noqa: BLE001
        litellm_version = "?"
    git = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    return {
        "cores": str(os.cpu_count()),
        "cpu": cpu or platform.processor() or "?",
        "python": platform.python_version(),
        "os": f"{platform.system()} {platform.release()}",
        "litellm": litellm_version,
        "git": git.removeprefix("git version "),
    }


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def render(
    args: argparse.Namespace,
    runs: list[Run],
    one: Run,
    noop: Noop | None,
    extra: list[Run],
    warmup_s: float,
    total_s: float,
    diagnosis: tuple | None = None,
    into_wiki: IntoWiki | None = None,
) -> str:
    m = machine()
    today = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    top = max(r.concurrency for r in runs)
    best = next(r for r in runs if r.concurrency == top)
    all_runs = runs + extra
    loads = [r.load for r in all_runs]
    lines = [
        "## Compile",
        "",
        f"Measured {today} with `python -m bench.compile.run{' --quick' if args.quick else ''}"
        f"{f' --delay {args.delay:g}' if args.delay != 0.2 else ''}` "
        f"(the whole bench took {total_s:.0f} s). Reproduce with the same command; "
        "`python -m bench.compile.diagnose` repeats the diagnosis alone.",
        "",
        f"Machine: {m['cores']} cores ({m['cpu']}), {m['os']}, Python {m['python']}, "
        f"litellm {m['litellm']}, git {m['git']}. The machine was shared: the 1-minute load "
        f"average before the runs was {min(loads):.1f}-{max(loads):.1f} (other processes "
        "competing for the 2 cores), so figures vary from run to run; each is the median of "
        f"{args.runs} runs, with the range shown.",
        "",
        "Setup: the fake OpenAI-compatible server of tests/fakes (real HTTP on loopback, "
        "TCP_NODELAY) "
        + (
            "in a process of its own, as a model server runs (in a thread of the bench it "
            "shares the compiler's GIL; the diagnosis below compares both), "
            if args.fake_in == "process"
            else "in a thread of the bench process (sharing the compiler's GIL), "
        )
        + "answering every stage with kb_responder's JSON after a fixed "
        f"**{args.delay:g} s** per call, counted from the request's arrival (the fake's own "
        "parsing and answering happen within it). The pipeline and "
        "the LLM client are the ones the CLI uses (`Compiler` with the default `open_llm`: "
        "for an OpenAI-compatible server the plain-HTTP transport, with the response cache "
        "and call log in state.db; the litellm transport, which hosted providers use, is "
        "measured in the diagnosis below); litellm is imported "
        f"once before timing ({warmup_s:.1f} s, not counted). Each run compiles into a fresh "
        "knowledge base, so state.db and its response cache start empty; every run's calls "
        "were checked to reach the server (0 cache hits). Wall time is the whole "
        "`compile_paths` call: reading, the four stages, indexes, state.db and the git commit.",
        "",
        (
            f"The fake server's listen backlog is raised to {args.fake_backlog} "
            "(socketserver's default is 5: with 16 connections opened at once the kernel drops "
            "some, TCP retries them about 1 s later, and the bench would charge that to the "
            "compiler); the kernel's ListenOverflows counter is shown per measurement."
            if args.fake_backlog
            else "The fake server keeps socketserver's listen backlog of 5 (--fake-backlog 0)."
        ),
        "",
        f"Corpus: the {runs[0].docs} decision records of {args.adr_dir} "
        f"({runs[0].source_chars:,} characters, every one a single chunk), read in place"
        + (f", plus {args.synthetic} synthetic notes" if args.synthetic else "")
        + ".",
        "",
        "### Throughput and efficiency",
        "",
        "Ideal time is the lower bound for N calls of d seconds each with C in flight: a "
        "slot runs one call at a time, so some slot runs at least ceil(N / C) calls one "
        "after another; and a one-chunk source needs extract -> classify -> write in "
        "sequence (chunks of one source are extracted side by side, so are the writes of "
        f"one source), so no run is shorter than {CHAIN} calls: "
        f"**ideal = max(ceil(N / C), {CHAIN}) x d**, efficiency = ideal / measured. The "
        f"fractional form max(N x d / C, {CHAIN} x d) is shown too; no schedule reaches it "
        "when C does not divide N (113 calls at 16 in flight need 8 rounds, not 7.06). "
        "Both bounds ignore the run's fixed costs (reading, indexes, git commit), which the "
        "measured time includes.",
        "",
        "Calls/s is the rate the run sustained (N / wall); overhead per call is "
        "(wall - ideal) / N x C, the time each call cost beyond the model's delay when the "
        "slots are full (at 1 in flight, the serial cost of one call). Listen overflows is "
        "the kernel's machine-wide counter during the runs (other processes included).",
        "",
        "| in flight | docs | s/call | wall s (median) | range s | docs/s | calls | calls/s | "
        "ideal s | efficiency | fractional ideal s | efficiency (fractional) | "
        "overhead per call ms | max in flight | listen overflows |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in all_runs:
        lines.append(
            f"| {r.concurrency} | {r.docs} | {r.delay:g} | {r.wall_s:.2f} | "
            f"{min(r.walls):.2f}-{max(r.walls):.2f} | {r.docs / r.wall_s:.2f} | {r.calls} | "
            f"{r.calls / r.wall_s:.1f} | {r.ideal_s:.2f} | **{r.efficiency:.2f}** | "
            f"{r.fluid_ideal_s:.2f} | {r.fluid_efficiency:.2f} | "
            f"{(r.wall_s - r.ideal_s) / r.calls * r.concurrency * 1000:.0f} | "
            f"{r.max_in_flight} | {r.overflows} |"
        )
    lines += [
        "",
        "Where the time of the median run went (seconds from the start of the run, from the "
        "server's arrival times): the first call; the last extract/classify reply; the first "
        "write call (the write stage starts only when every source is extracted and "
        "classified); the last write reply; what followed it (indexes, state.db, git "
        "commit); and the mean number of calls in flight (N x d / wall).",
        "",
        "| in flight | docs | s/call | first call | last prepare reply | first write call | "
        "gap at stage barrier | last write reply | after last reply | mean in flight |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in all_runs:
        t = r.timeline()
        lines.append(
            f"| {r.concurrency} | {r.docs} | {r.delay:g} | {t.get('first_call_s', 0):.2f} | "
            f"{t.get('last_prepare_reply_s', 0):.2f} | {t.get('first_write_call_s', 0):.2f} | "
            f"{t.get('barrier_gap_s', 0):.2f} | {t.get('last_write_reply_s', 0):.2f} | "
            f"{t.get('tail_after_last_reply_s', 0):.2f} | {t.get('mean_in_flight', 0):.1f} |"
        )
    lines += [
        "",
        "### Model use per document",
        "",
        "Prompt tokens are what the fake server counts (characters of the JSON-encoded "
        "messages / 4); prompt characters are the characters of the message contents sent; "
        "source characters are those of the files compiled.",
        "",
        "| in flight | docs | calls/doc | extract | classify | write | prompt tokens/doc | "
        "completion tokens/doc | prompt chars/doc | prompt chars per source char |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in all_runs:
        st = r.stages
        lines.append(
            f"| {r.concurrency} | {r.docs} | {r.per_doc(r.calls):.2f} | {st.get('extract', 0)} | "
            f"{st.get('classify', 0)} | {st.get('write', 0) + st.get('patch', 0)} | "
            f"{r.per_doc(r.prompt_tokens):,.0f} | {r.per_doc(r.completion_tokens):,.0f} | "
            f"{r.per_doc(r.prompt_chars):,.0f} | {r.prompt_chars / r.source_chars:.1f}x |"
        )
    s1 = one.stages
    lines += [
        "",
        f"One source alone ({args.one_doc}, {one.source_chars:,} characters, one chunk) into "
        f"a fresh knowledge base: **{one.calls} calls** (extract {s1.get('extract', 0)}, "
        f"classify {s1.get('classify', 0)}, write {s1.get('write', 0) + s1.get('patch', 0)}), "
        f"{one.created} article created, {one.prompt_tokens:,} prompt tokens, "
        f"{one.prompt_chars:,} prompt characters ({one.prompt_chars / one.source_chars:.1f}x "
        f"the source), {one.wall_s:.2f} s at {one.delay:g} s per call.",
        "",
    ]
    if into_wiki is not None:
        w = into_wiki
        model_s = 3 * w.delay
        lines += [
            "### One note into a large wiki",
            "",
            f"bench/ask's synthetic wiki of {w.articles:,} articles, copied in and committed to "
            "git, then one new note at a time compiled into it (16 in flight, the same fake "
            f"model at {w.delay:g} s per call), as a team adds a note to a grown wiki. The "
            f"first compile after the copy reads every article once to check the indexes: "
            f"{w.first_s:.2f} s. Then {len(w.walls)} runs, one new note each:",
            "",
            "| articles | calls | model time s | wall s (median) | range s | beside the model s "
            "| first request at s | after the last reply s |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|",
            f"| {w.articles:,} | {max(w.calls)} | {model_s:.2f} | "
            f"{statistics.median(w.walls):.2f} | {min(w.walls):.2f}-{max(w.walls):.2f} | "
            f"{statistics.median(w.walls) - model_s:.2f} | "
            f"{statistics.median(w.first_call_s):.2f} | {statistics.median(w.tail_s):.2f} |",
            "",
            "Beside the model: loading and ranking the catalog runs alongside the extract "
            "call; after the last reply come the indexes (rewritten whole: a "
            f"{w.articles:,}-line master index), the git commit and the search index.",
            "",
        ]
    if noop is not None:
        lines += [
            "### No-op re-run",
            "",
            f"{noop.sources:,} small synthetic notes compiled once (delay 0, 16 in flight: "
            f"{noop.seed_calls:,} calls, {noop.seed_wall_s:.1f} s), then compiled again "
            "unchanged. The process figure is the wall time of a whole `kb-ai --kb DIR compile "
            "NOTES --json --concurrency 16` process, as a user runs it (Python start-up "
            f"included), over {len(noop.process_s)} runs; the in-process figure is "
            "`Compiler.compile_paths` alone in a warm interpreter.",
            "",
            "| measure | median s | min s | max s | model calls |",
            "|---|---:|---:|---:|---:|",
            f"| `kb-ai compile` process | **{statistics.median(noop.process_s):.2f}** | "
            f"{min(noop.process_s):.2f} | {max(noop.process_s):.2f} | "
            f"{max(noop.process_calls)} (server saw {noop.server_requests_during}) |",
            f"| `compile_paths` in process | {statistics.median(noop.in_process_s):.2f} | "
            f"{min(noop.in_process_s):.2f} | {max(noop.in_process_s):.2f} | "
            f"{max(noop.in_process_calls)} |",
            f"| `python -c pass` | {noop.python_startup_s:.2f} | | | |",
            f"| `kb-ai --help` | {noop.help_s:.2f} | | | |",
            "",
            f"Every re-run reported {min(noop.process_skipped):,} of {noop.sources:,} sources "
            "unchanged.",
            "",
        ]
    if diagnosis is not None:
        from bench.compile.diagnose import variant_table

        rows, costs, (p_wall, p_cpu, p_calls, p_rows) = diagnosis
        lines += [
            "### Diagnosis: where the time beyond the model goes",
            "",
            f"The same {runs[0].docs} records at {top} in flight, {args.delay:g} s per call, "
            f"median of {args.runs} runs per variant: the LLM transport (litellm, which hosted "
            "providers go through, or the plain aiohttp transport the CLI uses for an "
            "OpenAI-compatible endpoint: `transport = 'http'`) x where the "
            "client keeps its response cache and call log (state.db as the CLI does, or "
            "memory: `db_path=None`) x where the fake server runs (a thread of the bench "
            "process, sharing its GIL, or a process of its own). Overhead per round = "
            "(wall - ideal) / max(ceil(N / C), 3).",
            "",
            *variant_table(rows, args.delay, top),
            "",
            "Cost of one response-cache / call-log operation on this disk (`CallStore`, one "
            f"connection kept open): get {costs['get']:.2f} ms, put {costs['put']:.2f} ms, log "
            f"{costs['log']:.2f} ms. Every model call does a get, a put and a log, in the "
            "store's own thread: the event loop awaits the get and never waits for the writes.",
            "",
            f"The event loop thread's time in one CLI-like run (the default transport, state.db, "
            f"server in a thread; {top} in flight, {args.delay:g} s per call) under cProfile, by "
            f"category (tottime): wall {p_wall:.2f} s (profiler included), CPU time of the "
            f"loop thread {p_cpu:.2f} s, {p_calls} calls. Everything but the first row "
            "blocks the loop: while it runs, no reply is taken in and no request is sent.",
            "",
            "| category | s | ms per call |",
            "|---|---:|---:|",
            *(f"| {name} | {secs:.2f} | {secs / p_calls * 1000:.1f} |" for name, secs in p_rows),
            "",
        ]
    lines += ["### Targets", ""]
    lines.append(
        f"- Efficiency >= {TARGET_EFFICIENCY} at {best.concurrency} in flight "
        f"({best.delay:g} s per call, {best.docs} docs): "
        f"**{verdict(best.efficiency >= TARGET_EFFICIENCY)}** ({best.efficiency:.2f}; "
        f"{best.fluid_efficiency:.2f} against the fractional bound)."
        + "".join(f" With {r.docs} docs at {r.delay:g} s: {r.efficiency:.2f}." for r in extra)
    )
    one_ok = one.calls <= TARGET_CALLS_ONE_DOC and one.created == 1
    lines.append(
        f"- At most {TARGET_CALLS_ONE_DOC} LLM calls for a one-chunk source that creates one "
        f"article: **{verdict(one_ok)}** ({one.calls} calls, {one.created} article)."
    )
    if noop is not None:
        med = statistics.median(noop.process_s)
        ok = (
            med < TARGET_NOOP_S
            and max(noop.process_calls) == 0
            and noop.server_requests_during == 0
        )
        lines.append(
            f"- No-op re-run of {noop.sources:,} sources under {TARGET_NOOP_S:g} s with 0 calls: "
            f"**{verdict(ok)}** ({med:.2f} s median for the process, "
            f"{max(noop.process_calls)} calls)."
        )
    lines.append("")
    return "\n".join(lines)


# -- main ------------------------------------------------------------------------------------


def describe(run: Run) -> str:
    timeline = {k: round(v, 2) for k, v in run.timeline().items()}
    return (
        f"{run.concurrency:>3} in flight, {run.docs} docs, {run.delay:g} s/call: "
        f"{run.wall_s:.2f} s median of {[round(w, 2) for w in run.walls]} "
        f"({run.docs / run.wall_s:.2f} docs/s), {run.calls} calls, ideal {run.ideal_s:.2f} s, "
        f"efficiency {run.efficiency:.2f} (fractional {run.fluid_efficiency:.2f}), "
        f"max in flight {run.max_in_flight}, listen overflows {run.overflows}, "
        f"load {run.load:.1f}, timeline {json.dumps(timeline)}"
    )


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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 0.05 s delay, 1 run per level, 200 no-op sources, "
        "no diagnosis; prints only",
    )
    parser.add_argument("--delay", type=float, default=None, help="seconds per model reply (0.2)")
    parser.add_argument("--concurrency", default="1,4,16", help="calls in flight, comma-separated")
    parser.add_argument(
        "--runs", type=int, default=None, help="runs per measurement; the median is reported (3)"
    )
    parser.add_argument("--adr-dir", type=Path, default=ADR_DIR)
    parser.add_argument(
        "--synthetic", type=int, default=0, help="synthetic notes added to the corpus"
    )
    parser.add_argument(
        "--large",
        type=int,
        default=None,
        help="also compile the ADRs + this many synthetic notes at the top "
        "concurrency (default 122, a 160-document run; 0 to skip)",
    )
    parser.add_argument(
        "--slow-delay",
        type=float,
        default=None,
        help="also compile the ADRs at the top concurrency with this delay "
        "(default 0.5, the peer's model; 0 to skip)",
    )
    parser.add_argument(
        "--noop-sources", type=int, default=None, help="sources for the no-op run (1000)"
    )
    parser.add_argument("--repeats", type=int, default=None, help="no-op re-runs to time (5)")
    parser.add_argument("--one-doc", default="0001-record-architecture-decisions.md")
    parser.add_argument(
        "--into-wiki",
        type=int,
        default=None,
        help="also compile one note at a time into a wiki of this many articles "
        "(default 10000, 0 to skip; bench/ask builds and caches the wiki)",
    )
    parser.add_argument(
        "--fake-backlog",
        type=int,
        default=128,
        help="listen backlog of the fake server (0: leave its default of 5)",
    )
    parser.add_argument(
        "--fake-in",
        choices=("process", "thread"),
        default="process",
        help="where the fake model runs: a process of its own, as a model server does "
        "(default), or a thread of the bench, sharing the compiler's GIL",
    )
    parser.add_argument(
        "--diagnose",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="add the variant matrix of bench.compile.diagnose (on unless --quick)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"write the Markdown here (default {DOC.relative_to(REPO)}, not with --quick)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args(argv)
    quick = args.quick
    args.delay = args.delay if args.delay is not None else (0.05 if quick else 0.2)
    args.runs = args.runs or (1 if quick else 3)
    args.noop_sources = (
        args.noop_sources if args.noop_sources is not None else (200 if quick else 1000)
    )
    args.repeats = args.repeats or (2 if quick else 5)
    args.into_wiki = args.into_wiki if args.into_wiki is not None else (0 if quick else 10_000)
    args.large = args.large if args.large is not None else (0 if quick else 122)
    args.slow_delay = args.slow_delay if args.slow_delay is not None else (0 if quick else 0.5)
    args.diagnose = (not quick) if args.diagnose is None else args.diagnose
    out = args.out or (None if quick else DOC)
    levels = [int(x) for x in args.concurrency.split(",") if x.strip()]
    top = max(levels)

    bench_started = time.monotonic()
    t0 = time.monotonic()
    from kb_ai.llm._litellm import _litellm

    _litellm()  # import once, outside every timed run
    warmup_s = time.monotonic() - t0

    work = Path(tempfile.mkdtemp(prefix="kb-bench-compile-"))
    diagnosis = None
    try:
        with fake_model(args) as fake:
            # One object plays both parts in the process variant; the thread variant
            # hands out the server and its responder.
            server, responder = fake
            corpus = adr_files(args.adr_dir)
            if args.synthetic:
                corpus += synthetic_notes(work / "synthetic", args.synthetic)
            # A throw-away compile warms the client, the prompts and the server.
            compile_once("warmup", work, corpus[:2], server, responder, 4)
            runs = []
            for c in levels:
                runs.append(compile_median(f"c{c}", work, corpus, server, responder, c, args.runs))
                print(describe(runs[-1]), flush=True)
            extra = []
            if args.large:
                big = adr_files(args.adr_dir) + synthetic_notes(work / "large", args.large, seed=3)
                extra.append(
                    compile_median(f"large-c{top}", work, big, server, responder, top, args.runs)
                )
                print(describe(extra[-1]), flush=True)
            if args.slow_delay:
                responder.delay = args.slow_delay
                try:
                    extra.append(
                        compile_median(
                            f"slow-c{top}", work, corpus, server, responder, top, args.runs
                        )
                    )
                finally:
                    responder.delay = args.delay
                print(describe(extra[-1]), flush=True)
            one = compile_once("one", work, [args.adr_dir / args.one_doc], server, responder, 1)
            print(f"one source: {one.calls} calls {one.stages}, {one.created} created", flush=True)
            into_wiki = None
            if args.into_wiki:
                into_wiki = into_large_wiki(work, server, responder, args.into_wiki, args.repeats)
                print(
                    f"one note into {into_wiki.articles} articles: first {into_wiki.first_s:.2f} s, "
                    f"then {[round(w, 2) for w in into_wiki.walls]} s",
                    flush=True,
                )
            noop = None
            if args.noop_sources:
                noop = noop_rerun(work, server, responder, args.noop_sources, args.repeats)
                print(
                    f"no-op re-run of {noop.sources}: process {noop.process_s} s "
                    f"(calls {noop.process_calls}), in process {noop.in_process_s} s, "
                    f"python start-up {noop.python_startup_s:.2f} s, kb-ai --help "
                    f"{noop.help_s:.2f} s",
                    flush=True,
                )
        if args.diagnose:
            from bench.compile import diagnose

            print(f"diagnosis: variants at {top} in flight, {args.delay:g} s/call", flush=True)
            rows = diagnose.variant_rows(args.delay, top, args.runs)
            diagnosis = (rows, diagnose.store_costs(), diagnose.loop_breakdown(args.delay, top))
        text = render(
            args,
            runs,
            one,
            noop,
            extra,
            warmup_s,
            time.monotonic() - bench_started,
            diagnosis,
            into_wiki,
        )
        print()
        print(text)
        if out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text, encoding="utf-8")
            print(f"written to {out}")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
