"""Compile benchmark: throughput and efficiency against a model that answers after a
fixed delay, model use per document, and the cost of a no-op re-run.

    python -m bench.compile.run            # full run, writes docs/benchmarks-compile.md
    python -m bench.compile.run --quick    # smoke run (short delay, fewer no-op sources), prints only

The model is tests/fakes' OpenAI-compatible server (real HTTP, TCP_NODELAY) answering
every stage with kb_responder's JSON after a fixed delay; the pipeline is the real one,
through the same default LLM client the CLI uses. Every concurrency level compiles into
a fresh knowledge base (fresh state.db, so the response cache is empty), and the bench
checks that every call reached the server.

The corpus is the decision records in --adr-dir (read in place, never copied); with
--synthetic N, N generated notes are added to it.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from bench._common import REPO, burners
from bench.compile.corpus import ADR_DIR, adr_files, synthetic_notes
from bench.compile.fake_model import fake_model
from bench.compile.into_wiki import into_large_wiki
from bench.compile.noop import noop_rerun
from bench.compile.report import describe, render
from bench.compile.throughput import compile_median, compile_once

DOC = REPO / "docs" / "benchmarks-compile.md"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 0.05 s delay, 1 run per level, 200 no-op sources, "
        "no diagnosis; prints only",
    )
    parser.add_argument("--delay", type=float, default=None, help="seconds per model reply (0.2)")
    parser.add_argument("--concurrency", default="1,4,16", help="calls in flight, comma-separated")
    parser.add_argument(
        "--runs", type=int, default=None, help="runs per measurement; the median is reported (3)"
    )
    parser.add_argument("--adr-dir", type=Path, default=ADR_DIR)
    parser.add_argument(
        "--synthetic", type=int, default=0, help="synthetic notes added to the corpus"
    )
    parser.add_argument(
        "--large",
        type=int,
        default=None,
        help="also compile the ADRs + this many synthetic notes at the top "
        "concurrency (default 122, a 160-document run; 0 to skip)",
    )
    parser.add_argument(
        "--slow-delay",
        type=float,
        default=None,
        help="also compile the ADRs at the top concurrency with this delay "
        "(default 0.5, the peer's model; 0 to skip)",
    )
    parser.add_argument(
        "--noop-sources", type=int, default=None, help="sources for the no-op run (1000)"
    )
    parser.add_argument("--repeats", type=int, default=None, help="no-op re-runs to time (5)")
    parser.add_argument("--one-doc", default="0001-record-architecture-decisions.md")
    parser.add_argument(
        "--into-wiki",
        type=int,
        default=None,
        help="also compile one note at a time into a wiki of this many articles "
        "(default 10000, 0 to skip; bench/ask builds and caches the wiki)",
    )
    parser.add_argument(
        "--fake-backlog",
        type=int,
        default=128,
        help="listen backlog of the fake server (0: leave its default of 5)",
    )
    parser.add_argument(
        "--fake-in",
        choices=("process", "thread"),
        default="process",
        help="where the fake model runs: a process of its own, as a model server does "
        "(default), or a thread of the bench, sharing the compiler's GIL",
    )
    parser.add_argument(
        "--diagnose",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="add the variant matrix of bench.compile.diagnose (on unless --quick)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"write the Markdown here (default {DOC.relative_to(REPO)}, not with --quick)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument(
        "--burners",
        type=int,
        default=0,
        help="CPU-burning processes beside the compiles, not the diagnosis (loaded: 2 here)",
    )
    args = parser.parse_args(argv)
    quick = args.quick
    args.delay = args.delay if args.delay is not None else (0.05 if quick else 0.2)
    args.runs = args.runs or (1 if quick else 3)
    args.noop_sources = (
        args.noop_sources if args.noop_sources is not None else (200 if quick else 1000)
    )
    args.repeats = args.repeats or (2 if quick else 5)
    args.into_wiki = args.into_wiki if args.into_wiki is not None else (0 if quick else 10_000)
    args.large = args.large if args.large is not None else (0 if quick else 122)
    args.slow_delay = args.slow_delay if args.slow_delay is not None else (0 if quick else 0.5)
    args.diagnose = (not quick) if args.diagnose is None else args.diagnose
    out = args.out or (None if quick else DOC)
    levels = [int(x) for x in args.concurrency.split(",") if x.strip()]
    top = max(levels)

    bench_started = time.monotonic()
    t0 = time.monotonic()
    from kb_ai.llm._litellm import _litellm

    _litellm()  # import once, outside every timed run
    warmup_s = time.monotonic() - t0

    work = Path(tempfile.mkdtemp(prefix="kb-bench-compile-"))
    diagnosis = None
    try:
        with burners(args.burners), fake_model(args) as fake:
            # One object plays both parts in the process variant; the thread variant
            # hands out the server and its responder.
            server, responder = fake
            corpus = adr_files(args.adr_dir)
            if args.synthetic:
                corpus += synthetic_notes(work / "synthetic", args.synthetic)
            # A throw-away compile warms the client, the prompts and the server.
            compile_once("warmup", work, corpus[:2], server, responder, 4)
            runs = []
            for c in levels:
                runs.append(compile_median(f"c{c}", work, corpus, server, responder, c, args.runs))
                print(describe(runs[-1]), flush=True)
            extra = []
            if args.large:
                big = adr_files(args.adr_dir) + synthetic_notes(work / "large", args.large, seed=3)
                extra.append(
                    compile_median(f"large-c{top}", work, big, server, responder, top, args.runs)
                )
                print(describe(extra[-1]), flush=True)
            if args.slow_delay:
                responder.delay = args.slow_delay
                try:
                    extra.append(
                        compile_median(
                            f"slow-c{top}", work, corpus, server, responder, top, args.runs
                        )
                    )
                finally:
                    responder.delay = args.delay
                print(describe(extra[-1]), flush=True)
            one = compile_once("one", work, [args.adr_dir / args.one_doc], server, responder, 1)
            print(f"one source: {one.calls} calls {one.stages}, {one.created} created", flush=True)
            into_wiki = None
            if args.into_wiki:
                into_wiki = into_large_wiki(work, server, responder, args.into_wiki, args.repeats)
                print(
                    f"one note into {into_wiki.articles} articles: first {into_wiki.first_s:.2f} s, "
                    f"then {[round(w, 2) for w in into_wiki.walls]} s",
                    flush=True,
                )
            noop = None
            if args.noop_sources:
                noop = noop_rerun(work, server, responder, args.noop_sources, args.repeats)
                print(
                    f"no-op re-run of {noop.sources}: process {noop.process_s} s "
                    f"(calls {noop.process_calls}), in process {noop.in_process_s} s, "
                    f"python start-up {noop.python_startup_s:.2f} s, kb-ai --help "
                    f"{noop.help_s:.2f} s",
                    flush=True,
                )
        if args.diagnose:
            from bench.compile import diagnose

            print(f"diagnosis: variants at {top} in flight, {args.delay:g} s/call", flush=True)
            rows = diagnose.variant_rows(args.delay, top, args.runs)
            diagnosis = (rows, diagnose.store_costs(), diagnose.loop_breakdown(args.delay, top))
        text = render(
            args,
            runs,
            one,
            noop,
            extra,
            warmup_s,
            time.monotonic() - bench_started,
            diagnosis,
            into_wiki,
        )
        print()
        print(text)
        if out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text, encoding="utf-8")
            print(f"written to {out}")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
