"""Large-source benchmark: seconds to compile ONE source of 1, 2 and 5 MB when the model
fills every extraction reply to the schema's limits (issue 12, item 5).

    python -m bench.compile.large_source            # 1, 2, 5 MB; appends to docs/benchmarks-hardening.md
    python -m bench.compile.large_source --sizes 1  # one size, prints only

A source of N MB is about 42 x N chunks at the default chunk size, with a Markdown list
every 40 sentences; each chunk's extraction holds every item the schema allows (30
dated facts, 12 concepts, 12 entities, 12 decisions, 8 lists: the chunk's own cut to 5
items, then lists of 40 of its sentences, ...), all distinct, so merging and checking
them is the most work it can be. The model is tests/fakes' OpenAI-compatible server over real HTTP (no delay),
in a process of its own, through the client the CLI uses; its write reply is a bounded
article quoting the material, as a model's reply under max_tokens would be. Target
(issue 24): linear, the time per MB at 5 MB within 1.5 x that at 1 MB.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import platform
import random
import re
import resource
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.fakes import kb_responder
from tests.fakes.openai_server import FakeOpenAIServer, Reply

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "benchmarks-hardening.md"
MB = 1_000_000
TARGET_FACTOR = 1.5

_WORDS = [
    "cache", "queue", "broker", "region", "cluster", "shard", "replica", "ledger", "invoice",
    "tenant", "gateway", "scheduler", "pipeline", "backup", "snapshot", "index", "catalog",
    "runner", "worker", "deploy", "rollout", "budget", "audit", "policy", "quota", "token",
    "session", "archive", "metric", "alert", "incident", "review",
]  # fmt: skip
_NAMES = [
    "Ada", "Boris", "Chen", "Dana", "Emil", "Farah", "Goran", "Hana", "Ivo", "Jun", "Kira",
    "Lars", "Mei", "Nils", "Omar", "Pia",
]  # fmt: skip


def synthetic_source(size: int, seed: int = 12) -> str:
    """Prose of about ``size`` bytes, every sentence distinct (numbers, names, dates),
    each week's part opening with a list."""
    rng = random.Random(seed)
    parts = ["# Operations log of the platform team\n"]
    total, n = 0, 0
    while total < size:
        n += 1
        if n % 40 == 1:
            parts.append(f"\n## Week {n // 40 + 1}\n")
            parts.append(_rota(rng, n) + "\n")
            total += len(parts[-1])
        w = rng.sample(_WORDS, 4)
        who = rng.choice(_NAMES)
        sentence = (
            f"{who} decided that the {w[0]} {n} moves to the {w[1]} in region "
            f"r{rng.randint(1, 999)} because the {w[2]} {w[3]} grew to {rng.randint(10, 99_999):,} "
            f"entries by 2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}."
        )
        parts.append(sentence + ("\n\n" if n % 5 == 0 else " "))
        total += len(sentence) + 1
    return "".join(parts)


def _rota(rng: random.Random, n: int) -> str:
    """A week's rota: a Markdown list of eight distinct items (the extraction's lists
    are checked against every list of the source)."""
    items = []
    for k in range(8):
        w = rng.sample(_WORDS, 2)
        items.append(
            f"- {rng.choice(_NAMES)} checks the {w[0]} {n + k} and the {w[1]} of region "
            f"r{rng.randint(1, 999)} (ticket OPS-{n * 8 + k})"
        )
    return "\n".join(items) + "\n"


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=\.)\s+|\n", text) if len(s.split()) >= 4]


def full_extraction(request: dict[str, Any]) -> dict[str, Any]:
    """Every field of the extraction schema filled to its maxItems from the chunk."""
    reply = kb_responder.extract(request)
    text = "\n".join(kb_responder._between(kb_responder._user(request), "source"))
    s = _sentences(text) or [reply["summary"]]

    def take(n: int, start: int) -> list[str]:
        return [s[(start + i) % len(s)] for i in range(n)]

    # the chunk's own lists first, cut short as a model cuts them (the source completes
    # them), then lists of its sentences
    rotas = [r.split("\n") for r in re.findall(r"(?m)(?:^- .+\n?)+", text)]
    lists = [
        {"name": f"rota {k}", "items": [i[2:].strip() for i in r if i.strip()][:5]}
        for k, r in enumerate(rotas[:8])
    ]
    lists += [
        {"name": f"list {k} of {x[:60]}", "items": [y[:200] for y in take(40, 66 + k)]}
        for k, x in enumerate(take(8 - len(lists), 66))
    ]
    reply.update(
        topics=[w for w in _WORDS if w in text][:8],
        # each fact with what it is about (its first name) and when it held (its date)
        facts=[{"fact": x[:400], "about": x.split()[0], "held": _date(x)} for x in take(30, 0)],
        concepts=[{"name": x[:80], "description": x[:400]} for x in take(12, 30)],
        entities=[{"name": x[:80], "kind": "system", "description": x[:300]} for x in take(12, 42)],
        decisions=[{"what": x[:300], "why": x[-200:], "who": x.split()[0]} for x in take(12, 54)],
        enumerations=lists,
        action_items=[{"what": x[:300], "who": x.split()[0]} for x in take(12, 80)],
    )
    return reply


def _date(sentence: str) -> str:
    m = re.search(r"\d{4}-\d{2}-\d{2}", sentence)
    return m.group(0) if m else ""


def bounded_write(request: dict[str, Any]) -> dict[str, Any]:
    """An article quoting the material's first lines, about 12,000 characters at most."""
    user = kb_responder._user(request)
    material = "\n".join(m for _, m in kb_responder._material_sections(user))
    lines, size = [], 0
    for line in material.splitlines():
        if line.startswith("- ") and line.endswith(".") and size < 12_000:
            lines.append(line)
            size += len(line)
    body = "## What the log records\n\n" + "\n".join(lines)
    return {"title": "", "summary": lines[0][2:200] if lines else "", "tags": [], "body": body}


def respond(request: dict[str, Any]) -> Reply:
    stage = kb_responder.stage_of(request)
    if stage == "extract":
        return Reply(json.dumps(full_extraction(request), ensure_ascii=False))
    if stage == "write":
        return Reply(json.dumps(bounded_write(request), ensure_ascii=False))
    return kb_responder.respond(request)


def _serve(urls: Any, stop: Any) -> None:
    with FakeOpenAIServer(respond) as server:
        urls.put(server.base_url)
        stop.wait()


@contextmanager
def model_process() -> Iterator[str]:
    """The fake model in a process of its own: its work on multi-MB prompts takes
    neither the run's CPU time nor its GIL."""
    ctx = multiprocessing.get_context("fork")
    urls, stop = ctx.Queue(), ctx.Event()
    proc = ctx.Process(target=_serve, args=(urls, stop), daemon=True)
    proc.start()
    try:
        yield urls.get(timeout=60)
    finally:
        stop.set()
        proc.join(10)


def compile_one(size: int, base_url: str, work: Path) -> dict[str, Any]:
    """Compile one synthetic source of ``size`` bytes into a fresh KB; time and CPU."""
    from compiler import Compiler
    from kb_ai.settings import load_settings
    from wiki import KnowledgeBase

    kb_dir = work / f"kb-{size}"
    kb = KnowledgeBase.init(kb_dir)
    src = work / f"log-{size}.md"
    src.write_text(synthetic_source(size), encoding="utf-8")
    settings = load_settings(
        kb_dir,
        {
            "model": "openai/fake",
            "api_base": base_url,
            "api_key": "x",
            "max_source_bytes": 2 * size + MB,
            # The write prompt of a 5 MB source with extractions filled to their limits is
            # ~14 M characters, past max_prompt_chars (no model's context holds it): the
            # stand-in model takes it, so the merge's cost can still be measured.
            "max_prompt_chars": 0,
        },
        environ={},
    )
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    result, stall = asyncio.run(_compile_watching_the_loop(Compiler(kb, settings), src))
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    if result.failed or len(result.compiled) != 1:
        raise SystemExit(f"{size} bytes: the compile failed: {result.as_dict()['failed']}")
    return {
        "load": os.getloadavg()[0],
        "bytes": src.stat().st_size,
        "chunks": result.usage.calls - 2,  # every call but classify and write
        "seconds": wall,
        "cpu_s": cpu,
        "calls": result.usage.calls,
        "loop_stall_s": stall,
    }


async def _compile_watching_the_loop(compiler: Any, src: Path) -> tuple[Any, float]:
    """The run's result, and the longest time the event loop went without running a
    10 ms ticker (what a server's other requests would wait)."""
    longest = 0.0
    done = asyncio.Event()

    async def tick() -> None:
        nonlocal longest
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            longest = max(longest, now - last - 0.01)
            last = now

    ticker = asyncio.ensure_future(tick())
    try:
        result = await compiler.compile_paths([src])
    finally:
        done.set()
        await ticker
    return result, longest


def report(rows: list[dict[str, Any]]) -> str:
    base = rows[0]
    loads = [r["load"] for r in rows]
    lines = [
        "## Compiling one large source (issues 12 and 24)",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC with `python -m "
        "bench.compile.large_source` on "
        f"{platform.machine()}, {os.cpu_count()} cores (shared with other sessions: 1-minute "
        f"load average {min(loads):.1f} to {max(loads):.1f} at the sizes' ends), Python "
        f"{platform.python_version()}. One synthetic source per size (a list every 40 "
        "sentences), every chunk's extraction filled to the schema's limits, the fake "
        "OpenAI-compatible server over loopback HTTP with no delay, the CLI's client; a "
        "fresh knowledge base each. CPU s is the compiling process's (the fake model runs in "
        "another); the loop stall is the longest wait of a 10 ms ticker on the run's event "
        "loop.",
        "",
        "| source | chunks | seconds | CPU s | s per MB | x the 1 MB s per MB | CPU s per MB "
        "| x the 1 MB CPU per MB | longest loop stall | load |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    per_mb0 = base["seconds"] / (base["bytes"] / MB)
    cpu_mb0 = base["cpu_s"] / (base["bytes"] / MB)
    for r in rows:
        per_mb = r["seconds"] / (r["bytes"] / MB)
        cpu_mb = r["cpu_s"] / (r["bytes"] / MB)
        lines.append(
            f"| {r['bytes'] / MB:.1f} MB | {r['chunks']} | {r['seconds']:.1f} | "
            f"{r['cpu_s']:.1f} | {per_mb:.2f} | {per_mb / per_mb0:.2f} | {cpu_mb:.2f} | "
            f"{cpu_mb / cpu_mb0:.2f} | {r['loop_stall_s']:.2f} s | {r['load']:.1f} |"
        )
    last = rows[-1]
    ratio = (last["seconds"] / (last["bytes"] / MB)) / per_mb0
    cpu_ratio = (last["cpu_s"] / (last["bytes"] / MB)) / cpu_mb0
    verdict = "met" if ratio <= TARGET_FACTOR else "NOT met"
    lines += [
        "",
        f"Target (time per MB at the largest within {TARGET_FACTOR:g} x the smallest's): "
        f"{verdict} ({ratio:.2f} x in seconds, {cpu_ratio:.2f} x in CPU). Peak memory of the "
        f"process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,2,5", help="source sizes in MB, comma-separated")
    parser.add_argument("--no-write", action="store_true", help="print only, leave docs/ alone")
    args = parser.parse_args(argv)
    sizes = [int(float(s) * MB) for s in args.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp, model_process() as base_url:
        for size in sizes:
            row = compile_one(size, base_url, Path(tmp))
            print(json.dumps(row), flush=True)
            rows.append(row)
    text = report(rows)
    print(text)
    if not args.no_write and len(rows) > 1:
        DOC.parent.mkdir(exist_ok=True)
        existing = DOC.read_text(encoding="utf-8") if DOC.exists() else "# Hardening benchmarks\n\n"
        DOC.write_text(existing.rstrip("\n") + "\n\n" + text, encoding="utf-8")


if __name__ == "__main__":
    main()
