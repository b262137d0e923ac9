"""Where compile time goes beyond the model's delay: the same compile under variants.

    python -m bench.compile.diagnose [--delay 0.2] [--concurrency 16] [--profile FILE]

Variants: the LLM transport (litellm, which hosted providers go through, or the plain
aiohttp one the CLI uses for an OpenAI-compatible endpoint, ``transport = "http"``) x where the LLM client keeps its response cache and call
log (state.db, as the CLI does, or memory: ``db_path=None``) x where the fake server
runs (a thread of this process, sharing its GIL, or a separate process). Prints the
median wall time of --repeats runs, efficiency and the overhead per round
((wall - ideal) / max(ceil(N / C), 3)) for each; with --profile, writes a cProfile of
the CLI-like variant (litellm, state.db, server thread).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import dataclasses
import math
import pstats
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.compile.corpus import ADR_DIR, adr_files
from bench.compile.fake_model import DelayedResponder, widen_backlog
from bench.compile.throughput import CHAIN, make_settings
from tests.fakes.openai_server import FakeOpenAIServer


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def compile_dir(
    work: Path,
    name: str,
    paths: list[Path],
    base_url: str,
    concurrency: int,
    transport: str,
    store: str = "state.db",
    profile: Path | None = None,
) -> tuple[float, int]:
    from compiler import Compiler
    from kb_ai.llm import open_llm
    from wiki import KnowledgeBase

    kb_dir = work / name
    shutil.rmtree(kb_dir, ignore_errors=True)
    kb = KnowledgeBase.init(kb_dir)

    def factory(settings, *, db_path=None):
        chosen = dataclasses.replace(settings, transport=transport)
        return open_llm(chosen, db_path=db_path if store == "state.db" else None)

    compiler = Compiler(kb, make_settings(kb_dir, base_url, concurrency), llm_factory=factory)
    prof = cProfile.Profile() if profile else None
    t0 = time.monotonic()
    if prof:
        prof.enable()
    result = asyncio.run(compiler.compile_paths(paths))
    if prof:
        prof.disable()
    wall = time.monotonic() - t0
    if prof:
        prof.dump_stats(profile)
    if result.failed:
        raise SystemExit(f"{name}: {result.failed[0].error}")
    return wall, result.usage.calls


def _category(key: tuple) -> str:
    path, _, name = key
    if name == "<method 'poll' of 'select.epoll' objects>":
        return "idle: waiting for replies (epoll)"
    if "sqlite3" in name:
        return "SQLite: connect, execute, commit, close (response cache, call log, state)"
    if name == "<built-in method posix.fsync>":
        return "fsync of atomic file writes (raw, extraction, articles, indexes)"
    if "litellm" in path:
        return "litellm (Python)"
    if "/yaml/" in path:
        return "YAML frontmatter"
    if "subprocess" in path or "fork_exec" in name or "select.poll" in name:
        return "git subprocesses"
    if (
        any(
            lib in path
            for lib in ("httpx", "httpcore", "anyio", "h11", "aiohttp", "/openai/", "pydantic")
        )
        or "pydantic" in name
    ):
        return "HTTP client and pydantic"
    if "/compiler/" in path or "/wiki/" in path or "/kb_ai/" in path:
        return "kb-ai (Python)"
    return "everything else (asyncio, stdlib, sockets)"


def loop_breakdown(delay: float, concurrency: int = 16) -> tuple[float, float, int, list]:
    """One CLI-like compile (the default transport, state.db, server thread) under
    cProfile: the event loop thread's time by category. Returns (wall, loop thread CPU,
    calls, rows)."""
    from collections import Counter

    from compiler import Compiler
    from kb_ai.llm._litellm import _litellm
    from wiki import KnowledgeBase

    _litellm()
    paths = adr_files(ADR_DIR)
    work = Path(tempfile.mkdtemp(prefix="kb-bench-profile-"))
    try:
        with FakeOpenAIServer(DelayedResponder(delay)) as server:
            widen_backlog(server)
            compile_dir(work, "warm", paths[:2], server.base_url, 4, "litellm")
            kb = KnowledgeBase.init(work / "kb")
            compiler = Compiler(kb, make_settings(work / "kb", server.base_url, concurrency))
            prof = cProfile.Profile()
            t0, cpu0 = time.monotonic(), time.thread_time()
            prof.enable()
            result = asyncio.run(compiler.compile_paths(paths))
            prof.disable()
            wall, cpu = time.monotonic() - t0, time.thread_time() - cpu0
    finally:
        shutil.rmtree(work, ignore_errors=True)
    totals: Counter = Counter()
    for key, (_, _, tottime, _, _) in pstats.Stats(prof).stats.items():
        totals[_category(key)] += tottime
    return wall, cpu, result.usage.calls, totals.most_common()


def store_costs(n: int = 200) -> dict[str, float]:
    """Milliseconds per CallStore operation on a fresh state.db on this disk (one
    connection kept open, as the client's store thread does)."""
    from kb_ai.llm.store import CachedReply, CallRecord, CallStore

    work = Path(tempfile.mkdtemp(prefix="kb-bench-store-"))
    try:
        store = CallStore(work / "state.db")
        store.get("warm")
        text = "x" * 3000
        out = {}
        for name, op in (
            ("get", lambda i: store.get(f"k{i}")),
            ("put", lambda i: store.put(f"k{i}", CachedReply(text, "stop", 1, 1))),
            ("log", lambda i: store.log(CallRecord("extract", "m", 1, 1))),
        ):
            t0 = time.perf_counter()
            for i in range(n):
                op(i)
            out[name] = (time.perf_counter() - t0) / n * 1000
        store.close()
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def variant_rows(
    delay: float, concurrency: int, repeats: int, profile: Path | None = None, log=print
) -> list[tuple]:
    """(transport, store, where, walls, calls) for every variant."""
    from kb_ai.llm._litellm import _litellm

    _litellm()
    paths = adr_files(ADR_DIR)
    work = Path(tempfile.mkdtemp(prefix="kb-bench-diagnose-"))
    c, d = concurrency, delay
    variants = [(t, s) for t in ("litellm", "http") for s in ("state.db", "memory")]
    rows: list[tuple] = []

    def measure(where: str, base_url: str) -> None:
        for transport, store in variants:
            compile_dir(work, "warm", paths[:2], base_url, 4, transport, store)
            walls = []
            for i in range(repeats):
                wall, calls = compile_dir(
                    work, f"{where}-{transport}-{store}-{i}", paths, base_url, c, transport, store
                )
                walls.append(wall)
            rows.append((transport, store, where, walls, calls))
            log(f"  {transport} {store} server in {where}: {[round(w, 2) for w in walls]} s")

    try:
        with FakeOpenAIServer(DelayedResponder(d)) as server:
            widen_backlog(server)
            measure("thread", server.base_url)
            if profile:
                compile_dir(
                    work, "profiled", paths, server.base_url, c, "litellm", "state.db", profile
                )
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, "-c", SERVER_SCRIPT, str(port), str(d)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=str(Path(__file__).resolve().parents[2]),
        )
        try:
            proc.stdout.readline()  # "ready"
            measure("process", f"http://127.0.0.1:{port}/v1")
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rows


# The fake server in its own process, with the same widened listen backlog.
SERVER_SCRIPT = """
import sys
from bench.compile.fake_model import DelayedResponder, widen_backlog
from tests.fakes.openai_server import FakeOpenAIServer
server = FakeOpenAIServer(DelayedResponder(float(sys.argv[2])), port=int(sys.argv[1]))
widen_backlog(server)
print("ready", flush=True)
server._httpd.serve_forever()
"""


def variant_table(rows: list[tuple], delay: float, concurrency: int) -> list[str]:
    lines = [
        "| transport | cache and call log | fake server | wall s (median) | min-max s | calls | "
        "ideal s | efficiency | overhead per round s |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for transport, store, where, walls, calls in rows:
        rounds = max(math.ceil(calls / concurrency), CHAIN)
        ideal = rounds * delay
        wall = statistics.median(walls)
        lines.append(
            f"| {transport} | {store} | {where} | {wall:.2f} | {min(walls):.2f}-{max(walls):.2f} "
            f"| {calls} | {ideal:.2f} | {ideal / wall:.2f} | {(wall - ideal) / rounds:.3f} |"
        )
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--profile", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    rows = variant_rows(args.delay, args.concurrency, args.repeats, args.profile)
    print(
        f"\n38 docs, {args.concurrency} in flight, {args.delay:g} s per call, "
        f"median of {args.repeats}"
    )
    print("\n".join(variant_table(rows, args.delay, args.concurrency)))
    print("CallStore ms per operation:", {k: round(v, 2) for k, v in store_costs().items()})
    wall, cpu, calls, rows = loop_breakdown(args.delay, args.concurrency)
    print(f"profiled run: wall {wall:.2f} s, loop thread CPU {cpu:.2f} s, {calls} calls")
    for name, secs in rows:
        print(f"  {name:75s} {secs:6.2f} s {secs / calls * 1000:6.1f} ms/call")
    if args.profile:
        pstats.Stats(str(args.profile)).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
