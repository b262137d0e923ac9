"""Where each model call's time goes beyond the model's own: the three legs of a call.

    python -m bench.compile.latency [--runs 5] [--concurrency 16] [--delay 0.2]
                                    [--calls] [--free-checks]

The 38 decision records at 16 in flight against the fake model in a process of its own
(as bench.compile.run), each run into a fresh knowledge base. Every call the HTTP
transport makes is timed at three points on the client (``send`` called, its body
written, per aiohttp's trace; its reply's headers read) and matched to the fake's own
arrival stamp by its prompt's length (the few calls whose length is not unique are left
out and counted). Per call:

- out: from ``send`` to the body written (the event loop busy with other work, or the
  connection's own writing);
- over: from the body written to the fake's arrival stamp (loopback, and the fake's
  process taking the request up);
- back: from the reply being due (arrival + delay) to the client reading its headers
  (the fake writing it, and the client's event loop busy with other replies).

A call costs the run its delay plus these three; a round of calls at 16 in flight
costs the delay plus the largest of them, so p90 and max matter more than the median.
Legs are shown for the run of median wall time; ``--calls`` prints its every call in
the order they started. ``--switch-interval`` sets how long a thread may hold
the interpreter lock while another waits for it. ``--free-checks`` replaces the grounding checks (the extraction's fidelity check, the written article's
review) by ones that pass everything at no cost: the wall time then bounds what making
the checks faster could give. That is a measurement only; nothing it compiles is kept.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.compile.corpus import ADR_DIR, adr_files
from bench.compile.throughput import fresh_compiler, warm_fake


class CallClock:
    """Times each call of kb_ai.llm's HTTP transport, keyed by its prompt's length (the
    fake model logs the same length with its arrival stamp)."""

    def __init__(self) -> None:
        self.calls: dict[int, dict[str, float]] = {}
        self.repeated: Counter[int] = Counter()

    def clear(self) -> None:
        self.calls.clear()
        self.repeated.clear()

    def install(self) -> None:
        from kb_ai.llm import _http, _slots

        clock = self
        send, post, read = _http.HttpTransport.send, _http.HttpTransport._post, _http._read_bounded

        async def timed_send(transport: Any, request: Any) -> Any:
            times = clock._times(request, new=True)
            times["start"] = time.monotonic()
            return await send(transport, request)

        def timed_post(transport: Any, request: Any, *, stream: bool) -> Any:
            times = clock._times(request)
            told = _slots.on_sent.get()

            def sent() -> None:
                times.setdefault("out", time.monotonic())
                if told is not None:
                    told()

            token = _slots.on_sent.set(sent)
            try:
                return post(transport, request, stream=stream)
            finally:
                _slots.on_sent.reset(token)

        async def timed_read(response: Any, request: Any) -> bytes:
            clock._times(request)["headers"] = time.monotonic()
            return await read(response, request)

        _http.HttpTransport.send = timed_send  # type: ignore[method-assign]
        _http.HttpTransport._post = timed_post  # type: ignore[method-assign]
        _http._read_bounded = timed_read

    def _times(self, request: Any, new: bool = False) -> dict[str, float]:
        chars = sum(len(m.get("content") or "") for m in request.messages)
        if new and chars in self.calls:
            self.repeated[chars] += 1
        return self.calls.setdefault(chars, {})


def free_checks() -> None:
    """The grounding checks replaced by ones that accept every reply at no cost."""
    from compiler import extract, write
    from compiler.checks import Review
    from kb_ai.grounding import Evidence

    extract.check_extraction = lambda ex, source, **_: ex  # type: ignore[assignment]
    write.review_body = lambda body, **_: Review(body=body)  # type: ignore[assignment]
    write.evidence_for = lambda *_a, **_k: Evidence("")  # type: ignore[assignment]


def legs(clock: CallClock, log: list[tuple[float, str, int]], delay: float, t0: float) -> list:
    """(start from t0, stage, out, over, back) in seconds, one per matched call."""
    arrived: dict[int, tuple[float, str]] = {}
    twice: set[int] = set(clock.repeated)
    for at, stage, chars in log:
        if chars in arrived:
            twice.add(chars)
        arrived[chars] = (at, stage)
    rows = []
    for chars, times in clock.calls.items():
        if chars in twice or chars not in arrived or not {"start", "out", "headers"} <= set(times):
            continue
        at, stage = arrived[chars]
        rows.append(
            (
                times["start"] - t0,
                stage,
                times["out"] - times["start"],
                at - times["out"],
                times["headers"] - (at + delay),
            )
        )
    return sorted(rows)


def _q(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[round(p * (len(ordered) - 1))] if ordered else 0.0


def summary(rows: list, stage_of: Callable[[str], str]) -> list[str]:
    lines = [
        "| stage | calls | leg | p50 ms | p90 ms | max ms | sum ms |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    groups: dict[str, list] = {}
    for row in rows:
        groups.setdefault(stage_of(row[1]), []).append(row)
    groups["all"] = rows
    for stage, group in groups.items():
        for i, leg in ((2, "out"), (3, "over"), (4, "back")):
            values = [r[i] * 1000 for r in group]
            lines.append(
                f"| {stage} | {len(group)} | {leg} | {_q(values, 0.5):.1f} | "
                f"{_q(values, 0.9):.1f} | {max(values):.1f} | {sum(values):.0f} |"
            )
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--adr-dir", type=Path, default=ADR_DIR)
    parser.add_argument("--calls", action="store_true", help="every call of the median run")
    parser.add_argument("--free-checks", action="store_true", help=free_checks.__doc__)
    parser.add_argument(
        "--switch-interval",
        type=float,
        default=0.0,
        help="sys.setswitchinterval for the compiling process (Python's default: 0.005 s)",
    )
    args = parser.parse_args(argv)
    if args.switch_interval:
        sys.setswitchinterval(args.switch_interval)
    from kb_ai.llm._litellm import _litellm

    _litellm()  # imported once, outside every timed run (as bench.compile.run)
    if args.free_checks:
        free_checks()
    clock = CallClock()
    clock.install()
    paths = adr_files(args.adr_dir)
    work = Path(tempfile.mkdtemp(prefix="kb-bench-latency-"))
    walls: list[float] = []
    runs: list[list] = []
    try:
        with warm_fake(args.delay, paths, work) as fake:
            for i in range(args.runs):
                kb_dir = work / f"kb-{i}"
                compiler = fresh_compiler(kb_dir, fake.base_url, args.concurrency)
                clock.clear()
                mark = fake.mark()
                t0 = time.monotonic()
                asyncio.run(compiler.compile_paths(paths))
                walls.append(time.monotonic() - t0)
                rows = legs(clock, fake.since(mark), args.delay, t0)
                runs.append(rows)
                sums = [sum(r[i] for r in rows) * 1000 for i in (2, 3, 4)]
                print(
                    f"run {i + 1}: wall {walls[-1]:.3f} s, {len(rows)} calls matched; "
                    f"out/over/back summed {sums[0]:.0f}/{sums[1]:.0f}/{sums[2]:.0f} ms",
                    flush=True,
                )
                shutil.rmtree(kb_dir, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    checks = "free" if args.free_checks else "as they are"
    median = sorted(range(len(walls)), key=walls.__getitem__)[(len(walls) - 1) // 2]
    rows = runs[median]
    print(f"\nmedian wall {walls[median]:.3f} s of {args.runs} runs (checks {checks});")
    print(f"the legs of that run's calls (run {median + 1}):\n")
    prep = {"extract", "classify"}
    print("\n".join(summary(rows, lambda s: "prepare" if s in prep else s)))
    if args.calls:
        print("\n| start s | stage | out ms | over ms | back ms |\n|---:|---|---:|---:|---:|")
        for start, stage, out, over, back in rows:
            print(
                f"| {start:.3f} | {stage} | {out * 1000:.1f} | {over * 1000:.1f} | {back * 1000:.1f} |"
            )


if __name__ == "__main__":
    main()
