"""Two checkouts compared compile by compile: their invocations alternate.

    python -m bench.compile.ab DIR_A DIR_B [--rounds 8] [--runs 4] [--burners 0]

bench.compile.paired swaps versions inside one process, which reaches only what it can
swap (compiler/stages.py); a change to git's use, the LLM client or the storage needs
the other version's whole tree. This runs ``--runs`` compiles of the 38 decision records
at 16 in flight (0.2 s a call, the fake in a process of its own) in a process of each
checkout's own, alternately A, B, B, A, ... for ``--rounds`` rounds, and pairs each
round's medians (the first compile of each process is left out: a cold start). Make the
other checkout with ``git worktree add /tmp/base REV``; it uses this environment's
packages, and its own code (it is first on the path). ``--burners N`` runs N
CPU-burning processes meanwhile (the loaded figure: two on these two cores).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from bench._common import burners
from bench.compile.paired import difference

# Run in the checkout's own interpreter process; only what every version since
# bench.compile.throughput came has (fresh_compiler, warm_fake, adr_files).
_WALLS = """
import asyncio, json, shutil, sys, tempfile, time
from pathlib import Path
from bench.compile.corpus import ADR_DIR, adr_files
from bench.compile.throughput import fresh_compiler, warm_fake
from kb_ai.llm._litellm import _litellm
_litellm()
paths, work, walls = adr_files(ADR_DIR), Path(tempfile.mkdtemp(prefix="kb-bench-ab-")), []
try:
    with warm_fake(0.2, paths, work) as fake:
        for i in range(int(sys.argv[1])):
            compiler = fresh_compiler(work / f"kb-{i}", fake.base_url, 16)
            t0 = time.monotonic()
            result = asyncio.run(compiler.compile_paths(paths))
            walls.append(time.monotonic() - t0)
            if result.failed:
                raise SystemExit(result.failed[0].error)
finally:
    shutil.rmtree(work, ignore_errors=True)
print(json.dumps(walls))
"""


def walls(checkout: Path, runs: int) -> list[float]:
    """Wall seconds of ``runs`` compiles in a process running ``checkout``'s code."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    proc = subprocess.run(
        [sys.executable, "-c", _WALLS, str(runs)],
        cwd=checkout, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"{checkout}: the compiles failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path, help="a checkout (the base)")
    parser.add_argument("b", type=Path, help="another checkout (the change)")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--runs", type=int, default=4, help="compiles per process (2 or more)")
    parser.add_argument("--burners", type=int, default=0, help="CPU-burning processes beside")
    args = parser.parse_args(argv)
    if args.runs < 2:
        parser.error("--runs must be 2 or more (the first compile of a process is left out)")
    a, b = args.a.resolve(), args.b.resolve()
    medians: dict[Path, list[float]] = {a: [], b: []}
    with burners(args.burners):
        for i in range(args.rounds):
            for checkout in (a, b) if i % 2 == 0 else (b, a):
                medians[checkout].append(statistics.median(walls(checkout, args.runs)[1:]))
            print(f"round {i + 1}: A {medians[a][-1]:.3f} s, B {medians[b][-1]:.3f} s", flush=True)
    for name, checkout in (("A", a), ("B", b)):
        values = medians[checkout]
        print(f"{name} {checkout}: median {statistics.median(values):.3f} s, "
              f"mean {statistics.mean(values):.3f} s")  # fmt: skip
    diffs = [y - x for x, y in zip(medians[a], medians[b], strict=True)]
    print(f"B - A: {difference(diffs, 'rounds')}")


if __name__ == "__main__":
    main()
