"""The event loop's own CPU time per compile: what the per-document work (checks, links,
journal, HTTP) costs the one thread that also dispatches every model call.

    python -m bench.compile.loop_cpu [--runs 4] [--concurrency 16] [--delay 0.2]

The 38 decision records at 16 in flight against the fake model in a process of its own
(as bench.compile.run), each run into a fresh knowledge base; prints per run the wall
time, the efficiency (ideal max(ceil(N / C), 3) x d over wall), the CPU time of the
thread that ran the event loop (time.thread_time: file work in worker threads is not in
it), the CPU of the whole process (every thread: file work, readers of helper
processes), that of the child processes it waited for during the run (git, a helper
process: work moved off the loop is counted, not hidden) and the 1-minute load
average. Wall time follows the machine's load; the loop's CPU much less, so it compares
code on a shared machine.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

from bench.compile.corpus import ADR_DIR, adr_files
from bench.compile.throughput import CHAIN, fresh_compiler, warm_fake


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--adr-dir", type=Path, default=ADR_DIR)
    args = parser.parse_args(argv)
    from kb_ai.llm._litellm import _litellm

    _litellm()  # imported once, outside every timed run
    paths = adr_files(args.adr_dir)
    work = Path(tempfile.mkdtemp(prefix="kb-bench-loop-"))
    try:
        with warm_fake(args.delay, paths, work) as fake:
            for i in range(args.runs):
                compiler = fresh_compiler(work / f"kb-{i}", fake.base_url, args.concurrency)
                load = os.getloadavg()[0]
                wall0, cpu0, all0 = time.monotonic(), time.thread_time(), time.process_time()
                kids0 = _children_cpu()
                result = asyncio.run(compiler.compile_paths(paths))
                wall, cpu = time.monotonic() - wall0, time.thread_time() - cpu0
                whole, kids = time.process_time() - all0, _children_cpu() - kids0
                calls = result.usage.calls
                ideal = max(math.ceil(calls / args.concurrency), CHAIN) * args.delay
                print(
                    f"run {i + 1}: wall {wall:.2f} s, efficiency {ideal / wall:.2f}, "
                    f"event-loop CPU {cpu:.2f} s, process CPU {whole:.2f} s, "
                    f"child processes' CPU {kids:.2f} s, {calls} calls, load {load:.1f}",
                    flush=True,
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    main()
