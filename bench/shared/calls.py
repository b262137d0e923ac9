"""What the model call log and response cache cost in state.db (SQLite) and in a shared
PostgreSQL database (database_url), per store operation and per model call.

    python -m bench.shared.calls [--ops 200] [--calls 64] [--in-flight 16] [--write]

Store operations: milliseconds each of CallStore.get (a hit, a miss), put and log, one
connection kept as the client's store thread keeps it. Model calls: ``--calls`` distinct
requests through open_llm against the fake OpenAI-compatible server (no delay, a thread
of this process), ``--in-flight`` at once, then the same requests again (every one a
cache hit); milliseconds of wall time per call, median of 3 rounds. Needs a PostgreSQL
server (``--server``, default postgresql://root@127.0.0.1:5432): a database of its own is
made for each backend's run and dropped.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path

from bench._common import REPO, load_average

OUT = REPO / "docs" / "benchmarks-shared.md"
MARK = "## The call log and response cache"


def _store_ops(store, n: int) -> dict[str, float]:
    from kb_ai.llm.store import CachedReply, CallRecord

    text = "x" * 3000
    out = {}
    for name, op in (
        ("put", lambda i: store.put(f"k{i}", CachedReply(text, "stop", 1, 1))),
        ("get (hit)", lambda i: store.get(f"k{i}")),
        ("get (miss)", lambda i: store.get(f"m{i}")),
        ("log", lambda i: store.log(CallRecord("extract", "m", 1, 1))),
    ):
        t0 = time.perf_counter()
        for i in range(n):
            op(i)
        out[name] = (time.perf_counter() - t0) / n * 1000
    return out


def _calls(settings, connect, db_path, calls: int, in_flight: int) -> tuple[float, float]:
    """ms per call: distinct requests (misses), then the same again (hits)."""
    from kb_ai.llm import open_llm

    run = uuid.uuid4().hex[:8]

    async def round_of(llm) -> float:
        gate = asyncio.Semaphore(in_flight)

        async def one(i: int) -> None:
            async with gate:
                ask = [{"role": "user", "content": f"question {run} {i}"}]
                done = await llm.complete(ask, stage="select")
                done.accept()

        t0 = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(calls)))
        return (time.perf_counter() - t0) / calls * 1000

    async def main() -> tuple[float, float]:
        async with open_llm(settings, db_path=db_path, connect=connect) as llm:
            miss = await round_of(llm)
            hit = await round_of(llm)
        return miss, hit

    return asyncio.run(main())


def measure(backend: str, server: str, ops: int, calls: int, in_flight: int) -> dict:
    import os

    import psycopg

    from kb_ai.llm.store import SHARED_MIGRATIONS, CallStore
    from kb_ai.settings import Settings
    from tests.fakes.openai_server import FakeOpenAIServer
    from wiki import KnowledgeBase
    from wiki.database import ENV, forget_databases, shared_connect

    name = f"kbai_bench_{uuid.uuid4().hex[:10]}"
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer() as fake:
        kb = KnowledgeBase.init(Path(tmp) / "kb")
        connect = None
        if backend == "PostgreSQL":
            with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
                admin.execute(f"CREATE DATABASE {name}")
            os.environ[ENV] = f"{server}/{name}"
            connect = shared_connect(kb, "llm", SHARED_MIGRATIONS)
        try:
            store = CallStore(kb.state_db, connect=connect)
            store.get("warm")
            op_ms = _store_ops(store, ops)
            store.close()
            settings = Settings(
                kb_dir=kb.root,
                model="openai/fake-model",
                api_base=fake.base_url,
                api_key="sk-bench",
                transport="http",
            )
            rounds = [_calls(settings, connect, kb.state_db, calls, in_flight) for _ in range(3)]
        finally:
            os.environ.pop(ENV, None)
            forget_databases()
            if backend == "PostgreSQL":
                with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
                    admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    return {
        "ops": op_ms,
        "miss": statistics.median(r[0] for r in rounds),
        "hit": statistics.median(r[1] for r in rounds),
    }


def report(rows: dict[str, dict], before: float, after: float, args) -> str:
    names = list(next(iter(rows.values()))["ops"])
    lines = [
        MARK,
        "",
        f"`python -m bench.shared.calls` ({args.ops} operations each; {args.calls} model calls,"
        f" {args.in_flight} in flight, against the fake server with no delay, median of 3"
        " rounds). PostgreSQL 15 on the same machine, over loopback. Measured"
        f" {datetime.now():%Y-%m-%d} on the project's machine (2 cores), shared with other"
        f" work: load average {before:.1f} before, {after:.1f} after; at that load a"
        " difference under ~30 % is noise.",
        "",
        "| backend | " + " | ".join(f"{n} ms" for n in names) + " | ms per call (misses) |"
        " ms per call (hits) |",
        "|---" * (len(names) + 3) + "|",
    ]
    for backend, row in rows.items():
        cells = [f"{row['ops'][n]:.2f}" for n in names] + [
            f"{row['miss']:.1f}",
            f"{row['hit']:.1f}",
        ]
        lines.append(f"| {backend} | " + " | ".join(cells) + " |")
    sqlite, pg = rows["SQLite"], rows["PostgreSQL"]
    lines += [
        "",
        "A shared store asks the database on every lookup (another server may have cached"
        " the reply meanwhile), where the SQLite one answers most misses from its in-memory"
        " key set; a put or a log is a transaction of its own, written in the store's"
        " thread (batched when calls come faster), so the event loop waits on neither. Per"
        f" model call the shared store cost {pg['miss'] - sqlite['miss']:.1f} ms more on"
        f" misses and {pg['hit'] - sqlite['hit']:.1f} ms more on hits here, against"
        " seconds for a model's reply.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--calls", type=int, default=64)
    parser.add_argument("--in-flight", type=int, default=16)
    parser.add_argument("--server", default="postgresql://root@127.0.0.1:5432")
    parser.add_argument("--write", action="store_true", help=f"append to {OUT.name}")
    args = parser.parse_args()
    before = load_average()
    rows = {
        backend: measure(backend, args.server, args.ops, args.calls, args.in_flight)
        for backend in ("SQLite", "PostgreSQL")
    }
    text = report(rows, before, load_average(), args)
    print(text)
    if args.write:
        old = OUT.read_text(encoding="utf-8")
        old = old.split(MARK, 1)[0].rstrip("\n") + "\n\n"
        OUT.write_text(old + text, encoding="utf-8")


if __name__ == "__main__":
    main()
