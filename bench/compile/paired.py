"""Ways of compiling compared run by run in one process, in turns: a paired comparison.

    python -m bench.compile.paired [--pairs 10] [--variants base,free-checks]
                                   [--stages FILE]

On these shared 2-core machines the same code's median moves by 0.05-0.1 s from one
invocation of bench.compile.run to the next (the host's load changes), more than most
changes it is asked to judge. Here each round runs every variant once, in alternating
order, into a fresh knowledge base, against one fake model process (as
bench.compile.run: the 38 decision records at 16 in flight, 0.2 s a call), so drift
touches all variants alike, and the difference is taken pair by pair.

Variants:

- ``base``: the code as it is;
- ``free-checks``: the grounding checks replaced by ones that pass everything at no
  cost (bench.compile.latency.free_checks): what making them faster could give at most;
- ``stages``: the stages of another version of compiler/stages.py, given with
  ``--stages FILE`` (e.g. ``git show REV:compiler/stages.py > FILE``), in place of this
  one's; only for a change confined to that file (the helpers it imports are this
  version's);
- ``stages+free-checks``: both.

Printed per variant: the median and mean wall time, the first call's arrival, the time
of the last extract/classify reply, what followed the last reply; then each variant against the
first, the median and mean of the pairwise differences.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from bench.compile.corpus import ADR_DIR, adr_files
from bench.compile.throughput import fresh_compiler, warm_fake

VARIANTS = ("base", "free-checks", "stages", "stages+free-checks")
#: The stages compiler/run.py calls, each taken from ``--stages FILE`` in its variants.
STAGES = ("extract_stage", "plan_stage", "write_stage", "index_stage", "commit_stage")


def load_stages(path: Path) -> ModuleType:
    """Another version of compiler/stages.py, as a module of its own."""
    spec = importlib.util.spec_from_file_location("bench_alt_stages", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def installer(alt: ModuleType | None) -> Callable[[str], None]:
    """A function that puts a variant in place (and takes the others' out)."""
    from bench.compile.latency import free_checks
    from compiler import extract, run, write

    base_stages = {name: getattr(run, name) for name in STAGES}
    as_is = (extract.check_extraction, write.review_body, write.evidence_for)

    def install(variant: str) -> None:
        extract.check_extraction, write.review_body, write.evidence_for = as_is
        for name, stage in base_stages.items():
            setattr(run, name, stage)
        if variant.startswith("stages"):
            assert alt is not None
            for name in STAGES:
                setattr(run, name, getattr(alt, name))
        if variant.endswith("free-checks"):
            free_checks()

    return install


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10, help="rounds of every variant once")
    parser.add_argument("--variants", default="base,free-checks")
    parser.add_argument("--stages", type=Path, help="another compiler/stages.py")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--adr-dir", type=Path, default=ADR_DIR)
    args = parser.parse_args(argv)
    variants = args.variants.split(",")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant(s) {', '.join(unknown)}: choose from {', '.join(VARIANTS)}")
    if any(v.startswith("stages") for v in variants) and args.stages is None:
        parser.error("the stages variants need --stages FILE")
    from kb_ai.llm._litellm import _litellm

    _litellm()  # imported once, outside every timed run (as bench.compile.run)
    install = installer(load_stages(args.stages) if args.stages else None)
    paths = adr_files(args.adr_dir)
    work = Path(tempfile.mkdtemp(prefix="kb-bench-paired-"))
    walls: dict[str, list[float]] = {v: [] for v in variants}
    prepared: dict[str, list[float]] = {v: [] for v in variants}
    tails: dict[str, list[float]] = {v: [] for v in variants}
    firsts: dict[str, list[float]] = {v: [] for v in variants}
    try:
        with warm_fake(args.delay, paths, work) as fake:
            for i in range(args.pairs):
                for variant in variants if i % 2 == 0 else reversed(variants):
                    install(variant)
                    kb_dir = work / f"kb-{i}-{variant}"
                    compiler = fresh_compiler(kb_dir, fake.base_url, args.concurrency)
                    mark = fake.mark()
                    t0 = time.monotonic()
                    result = asyncio.run(compiler.compile_paths(paths))
                    wall = time.monotonic() - t0
                    if result.failed:
                        raise SystemExit(f"{variant}: {result.failed[0].error}")
                    log = fake.since(mark)
                    last_prep = max(t for t, s, _ in log if s in ("extract", "classify"))
                    last = max(t for t, _, _ in log) + args.delay
                    walls[variant].append(wall)
                    prepared[variant].append(last_prep + args.delay - t0)
                    tails[variant].append(t0 + wall - last)
                    firsts[variant].append(min(t for t, _, _ in log) - t0)
                    shutil.rmtree(kb_dir, ignore_errors=True)
    finally:
        install("base")
        shutil.rmtree(work, ignore_errors=True)
    print(
        "| variant | wall s (median) | mean | first call ms | last prepare reply s "
        "| after the last reply ms |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for v in variants:
        print(
            f"| {v} | {statistics.median(walls[v]):.3f} | {statistics.mean(walls[v]):.3f} | "
            f"{statistics.median(firsts[v]) * 1000:.0f} | {statistics.median(prepared[v]):.3f} | {statistics.median(tails[v]) * 1000:.0f} |"
        )
    first = variants[0]
    for v in variants[1:]:
        diffs = [a - b for a, b in zip(walls[v], walls[first], strict=True)]
        print(f"\n{v} - {first}: {difference(diffs, 'pairs')}")


def difference(diffs: list[float], over: str) -> str:
    """Differences in seconds, said as their median and mean in milliseconds."""
    return (
        f"{statistics.median(diffs) * 1000:+.0f} ms median, "
        f"{statistics.mean(diffs) * 1000:+.0f} ms mean, over {len(diffs)} {over}"
    )


if __name__ == "__main__":
    main()
