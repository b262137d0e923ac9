"""Ask benchmark: the selection prompt's size and kb-ai's own time per question on
synthetic wikis of 100 to 100,000 articles, and the wall time of a whole `kb-ai ask`.

    python -m bench.ask.run            # 100, 1,000, 10,000, 100,000 articles; writes docs/benchmarks-ask.md
    python -m bench.ask.run --quick    # 100 and 1,000 articles, fewer runs; prints only

Own time: each size runs in a fresh Python process (so the first question pays what a
first question pays: templates, SQLite, cold caches in the process). Every question goes
through the real `retrieval.ask()` with tests/fakes' FakeLLM answering at once; the time
spent inside the fake's `complete`/`stream` (its handler, its JSON parsing, its usage
count) is measured and subtracted, so what is left is kb-ai's own work: loading the
catalog, the lexical shortlist, rendering prompts, reading pages, the second hop,
checking citations. The selection prompt is then rebuilt with `Asker.selection_prompt`
(untimed) and counted with `estimate_tokens` (what kb-ai budgets with) and tiktoken's
cl100k_base (for reference).

Whole process: `kb-ai --kb DIR ask --json QUESTION` as a subprocess against
FakeOpenAIServer with tests/fakes/kb_responder (real HTTP, answers at once), each run a
different question (so the response cache never answers), after one unrecorded warm-up.

Wikis are generated once and kept in bench/out/ask/ (git-ignored): articles written with
`wiki.write_article` (up to 10,000 articles; the 100,000 one writes the same frontmatter
+ body with `dump_document` and a plain write, skipping the per-file fsync), the master
index with `wiki.write_indexes`, the search index with `wiki.indexing.refresh_search_index`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from bench._common import REPO
from bench.ask.corpus import build_wiki
from bench.ask.own_time import child, own_time
from bench.ask.process import whole_process
from bench.ask.report import render

DOC = REPO / "docs" / "benchmarks-ask.md"

SIZES = (100, 1_000, 10_000, 100_000)
QUICK_SIZES = (100, 1_000)
PROCESS_SIZES = (1_000, 10_000, 100_000)
QUICK_PROCESS_SIZES = (1_000,)


def wait_for_quiet(limit_s: float, below: float = 1.0) -> float:
    """Wait (up to limit_s) until the 1-minute load average is under ``below``: timings on
    a 2-core machine shared with other work double under load. Returns the load then."""
    deadline = time.monotonic() + limit_s
    load = os.getloadavg()[0]
    while load >= below and time.monotonic() < deadline:
        print(f"load average {load:.1f}: waiting for a quieter machine", file=sys.stderr)
        time.sleep(15)
        load = os.getloadavg()[0]
    return load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 and 1,000 articles; prints only")
    parser.add_argument("--sizes", help="comma-separated wiki sizes (default: all, or quick's)")
    parser.add_argument("--runs", type=int, help="kb-ai ask runs per size (default 5, quick 2)")
    parser.add_argument(
        "--out",
        type=Path,
        help=f"write the Markdown here (default {DOC.relative_to(REPO)}; none with --quick)",
    )
    parser.add_argument(
        "--wait", type=float, default=600.0, help="seconds to wait for load average < 1 (0: none)"
    )
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--kb", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.kb), ensure_ascii=False))
        return

    sizes = (
        [int(s) for s in args.sizes.split(",")]
        if args.sizes
        else list(QUICK_SIZES if args.quick else SIZES)
    )
    process_sizes = [
        s for s in (QUICK_PROCESS_SIZES if args.quick else PROCESS_SIZES) if s in sizes
    ]
    runs = args.runs or (2 if args.quick else 5)
    roots, builds = {}, {}
    for size in sizes:
        t0 = time.perf_counter()
        roots[size] = build_wiki(size)
        builds[size] = json.loads((roots[size] / ".bench-complete.json").read_text())
        print(
            f"wiki {size:,}: ready in {time.perf_counter() - t0:.1f} s "
            f"(built: write {builds[size]['write_s']:.1f} s, search index "
            f"{builds[size]['search_index_s']:.1f} s)",
            file=sys.stderr,
        )
    load = wait_for_quiet(args.wait) if args.wait else os.getloadavg()[0]
    own = []
    for size in sizes:
        own.append(own_time(size, roots[size]))
        print(f"own time {size:,}: done", file=sys.stderr)
    proc = whole_process(process_sizes, roots, runs) if process_sizes else None
    fragment = render(builds, own, proc, args.quick, load)
    print(fragment)
    out = args.out or (None if args.quick else DOC)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(fragment, encoding="utf-8")
        print(f"written to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
