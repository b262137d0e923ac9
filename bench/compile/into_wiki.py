"""One note at a time compiled into a grown wiki: what a run costs beside its model calls
at that size."""

from __future__ import annotations

import asyncio
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.compile.throughput import make_settings


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
    from bench.ask.corpus import build_wiki
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
