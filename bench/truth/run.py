"""bench/truth: what keeping the wiki true costs.

- `kb-ai lint` (no model) on wikis of 1,000 and 10,000 articles: in-process seconds of
  a first lint (nothing kept: every article read), then of lints with each unchanged
  article's facts kept (median of 3), and a whole `python -m kb_ai lint` process.
- A revision of 1 source in a 1,000-article wiki: the model calls it makes and its
  seconds, with the stand-in model answering after a fixed delay. The revised note
  feeds an article that another source feeds too, so the rewrite reads that source's
  stored extraction as well.

    python -m bench.truth.run [--sizes 1000 10000] [--delay 0.2] [--write]

--write puts the figures in docs/benchmarks-truth.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._common import REPO, load_average
from bench.truth.corpus import build


def forget_lint_facts(root: Path) -> None:
    """Lint as for the first time: no article's facts kept (wiki/lintfacts.py)."""
    conn = sqlite3.connect(root / ".kb-ai" / "state.db")
    try:
        with conn:
            conn.execute("DROP TABLE IF EXISTS lint_facts")
            conn.execute("DELETE FROM schema_versions WHERE component = 'lint_facts'")
    finally:
        conn.close()


def lint_seconds(root: Path) -> dict:
    from wiki import KnowledgeBase
    from wiki.repair import lint_and_fix

    kb = KnowledgeBase.open(root)
    forget_lint_facts(root)
    started = time.perf_counter()
    first = lint_and_fix(kb)
    first_s = time.perf_counter() - started
    runs, report = [], None
    for _ in range(3):
        started = time.perf_counter()
        report = lint_and_fix(kb)
        runs.append(time.perf_counter() - started)
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "kb_ai", "--kb", str(root), "lint", "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), "KB_AI_DETECT_MODEL": "0"},
    )
    process = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"lint failed on {root}: {proc.stdout[-2000:]} {proc.stderr[-2000:]}")
    if first.as_dict() != report.as_dict():
        raise SystemExit(f"the kept facts changed what lint finds on {root}")
    return {
        "articles": report.articles,
        "findings": len(report.findings),
        "first_s": first_s,
        "in_process_s": runs,
        "median_s": statistics.median(runs),
        "process_s": process,
    }


def revision(size: int, delay: float, work: Path) -> dict:
    from bench.compile.fake_model import DelayedResponder
    from bench.compile.throughput import make_settings
    from compiler import Compiler
    from tests.fakes.openai_server import FakeOpenAIServer
    from wiki import KnowledgeBase, list_articles, read_article

    root = work / f"kb-{size}"
    shutil.copytree(build(size), root, ignore=shutil.ignore_patterns(".complete"))
    kb = KnowledgeBase.open(root)
    shared = read_article(kb, list_articles(kb)[0])
    note = work / "revised.md"
    note.write_text(f"# {shared.title}\n\nThe owner of this area is Priya. Reviews are weekly.\n")
    responder = DelayedResponder(delay)
    with FakeOpenAIServer(responder) as server:
        settings = make_settings(root, server.base_url, 8)
        first = asyncio.run(Compiler(kb, settings).compile_paths([note]))
        if first.failed or first.updated != [shared.path]:
            raise SystemExit(f"the note did not join {shared.path}: {first.as_dict()}")
        note.write_text(
            f"# {shared.title}\n\nThe owner of this area is Marcus. Reviews are monthly.\n"
        )
        mark = responder.mark()
        started = time.perf_counter()
        result = asyncio.run(Compiler(kb, settings).compile_paths([note]))
        wall = time.perf_counter() - started
        calls = responder.since(mark)
    body = read_article(kb, shared.path).body
    if "Priya" in body or "Marcus" not in body or result.failed:
        raise SystemExit(f"the revision did not take: {result.as_dict()}")
    return {
        "articles": size,
        "delay_s": delay,
        "calls": len(calls),
        "stages": [stage for _, stage, _ in calls],
        "prompt_chars": sum(chars for _, _, chars in calls),
        "seconds": wall,
        "updated": result.updated,
    }


def write_page(figures: dict) -> None:
    lint = figures["lint"]
    rev = figures["revision"]
    rows = "\n".join(
        f"| {f['articles']:,} | {f['first_s']:.2f} s "
        f"| {f['median_s']:.2f} s ({', '.join(f'{r:.2f}' for r in f['in_process_s'])}) "
        f"| {f['process_s']:.2f} s | {f['findings']} |"
        for f in lint
    )
    page = f"""# Benchmarks: keeping the wiki true (issue 14)

`python -m bench.truth.run --write`, {figures["when"]}, load average {figures["load"]:.1f}
on 2 cores (the machine was shared: figures on an idle machine are lower).

The wiki is bench/truth/corpus.py's: each article fed by one source (30 % by a second
one too), every source with its raw copy and extraction, one wikilink per article, the
indexes and state tables in step, all committed to git.

## `kb-ai lint` (no model)

| articles | first lint, nothing kept | again, unchanged wiki: median (3 runs) | whole `python -m kb_ai lint --json` (facts kept) | findings |
|---|---|---|---|---|
{rows}

The first lint reads every article once (frontmatter and body) and every source's
extraction once (the JSON block only), and keeps each article's facts in state.db
(wiki/lintfacts.py). A lint after it reads only what changed since: it takes one stat
per article and per extraction, the kept facts, the master index, and the catalog and
search tables, and runs the checks over the whole wiki (links, index, orphans, sources,
tables) on every article. Both find the same (the bench checks it).

## A revision of 1 source in a {rev["articles"]:,}-article wiki

The stand-in model (tests/fakes over loopback HTTP) answers each call after
{rev["delay_s"]} s. The revised note feeds an article another source feeds too.

| model calls | stages | prompt characters | seconds |
|---|---|---|---|
| {rev["calls"]} | {", ".join(rev["stages"])} | {rev["prompt_chars"]:,} | {rev["seconds"]:.2f} |

The article is written again from the current material of both its sources (the
other one's stored extraction is read, not re-extracted): what only the old version
of the note said is gone, and no other article is touched.
"""
    (REPO / "docs" / "benchmarks-truth.md").write_text(page, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    figures = {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load": load_average(),
        "lint": [],
    }
    for size in args.sizes:
        figures["lint"].append(lint_seconds(build(size)))
        print(json.dumps(figures["lint"][-1]), flush=True)
    with tempfile.TemporaryDirectory() as work:
        figures["revision"] = revision(1000, args.delay, Path(work))
    print(json.dumps(figures["revision"]), flush=True)
    figures["load"] = max(figures["load"], load_average())
    if args.write:
        write_page(figures)


if __name__ == "__main__":
    main()
