"""The compile benchmark's page (docs/benchmarks-compile.md) from its measurements."""

from __future__ import annotations

import argparse
import json
import statistics
from datetime import UTC, datetime

from bench._common import machine
from bench.compile.into_wiki import IntoWiki
from bench.compile.noop import Noop
from bench.compile.throughput import CHAIN, Run

TARGET_EFFICIENCY = 0.9
TARGET_CALLS_ONE_DOC = 3
TARGET_NOOP_S = 2.0


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def render(
    args: argparse.Namespace,
    runs: list[Run],
    one: Run,
    noop: Noop | None,
    extra: list[Run],
    warmup_s: float,
    total_s: float,
    diagnosis: tuple | None = None,
    into_wiki: IntoWiki | None = None,
) -> str:
    m = machine()
    today = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    top = max(r.concurrency for r in runs)
    best = next(r for r in runs if r.concurrency == top)
    all_runs = runs + extra
    loads = [r.load for r in all_runs]
    lines = [
        "## Compile",
        "",
        f"Measured {today} with `python -m bench.compile.run{' --quick' if args.quick else ''}"
        f"{f' --delay {args.delay:g}' if args.delay != 0.2 else ''}"
        f"{f' --burners {args.burners}' if args.burners else ''}` "
        f"(the whole bench took {total_s:.0f} s). Reproduce with the same command; "
        "`python -m bench.compile.diagnose` repeats the diagnosis alone.",
        "",
        f"Machine: {m['cores']} cores ({m['cpu']}), {m['os']}, Python {m['python']}, "
        f"litellm {m['litellm']}, git {m['git']}. The machine was shared: the 1-minute load "
        f"average before the runs was {min(loads):.1f}-{max(loads):.1f} (other processes "
        "competing for the 2 cores), so figures vary from run to run; each is the median of "
        f"{args.runs} runs, with the range shown."
        + (
            f" Every compile ran beside {args.burners} CPU-burning processes started by the "
            "bench (`while True: pass`): the loaded figure."
            if args.burners
            else ""
        ),
        "",
        "Setup: the fake OpenAI-compatible server of tests/fakes (real HTTP on loopback, "
        "TCP_NODELAY) "
        + (
            "in a process of its own, as a model server runs (in a thread of the bench it "
            "shares the compiler's GIL; the diagnosis below compares both), "
            if args.fake_in == "process"
            else "in a thread of the bench process (sharing the compiler's GIL), "
        )
        + "answering every stage with kb_responder's JSON after a fixed "
        f"**{args.delay:g} s** per call, counted from the request's arrival (the fake's own "
        "parsing and answering happen within it). The pipeline and "
        "the LLM client are the ones the CLI uses (`Compiler` with the default `open_llm`: "
        "for an OpenAI-compatible server the plain-HTTP transport, with the response cache "
        "and call log in state.db; the litellm transport, which hosted providers use, is "
        "measured in the diagnosis below); litellm is imported "
        f"once before timing ({warmup_s:.1f} s, not counted). Each run compiles into a fresh "
        "knowledge base, so state.db and its response cache start empty; every run's calls "
        "were checked to reach the server (0 cache hits). Wall time is the whole "
        "`compile_paths` call: reading, the four stages, indexes, state.db and the git commit.",
        "",
        (
            f"The fake server's listen backlog is raised to {args.fake_backlog} "
            "(socketserver's default is 5: with 16 connections opened at once the kernel drops "
            "some, TCP retries them about 1 s later, and the bench would charge that to the "
            "compiler); the kernel's ListenOverflows counter is shown per measurement."
            if args.fake_backlog
            else "The fake server keeps socketserver's listen backlog of 5 (--fake-backlog 0)."
        ),
        "",
        f"Corpus: the {runs[0].docs} decision records of {args.adr_dir} "
        f"({runs[0].source_chars:,} characters, every one a single chunk), read in place"
        + (f", plus {args.synthetic} synthetic notes" if args.synthetic else "")
        + ".",
        "",
        "### Throughput and efficiency",
        "",
        "Ideal time is the lower bound for N calls of d seconds each with C in flight: a "
        "slot runs one call at a time, so some slot runs at least ceil(N / C) calls one "
        "after another; and a one-chunk source needs extract -> classify -> write in "
        "sequence (chunks of one source are extracted side by side, so are the writes of "
        f"one source), so no run is shorter than {CHAIN} calls: "
        f"**ideal = max(ceil(N / C), {CHAIN}) x d**, efficiency = ideal / measured. The "
        f"fractional form max(N x d / C, {CHAIN} x d) is shown too; no schedule reaches it "
        "when C does not divide N (113 calls at 16 in flight need 8 rounds, not 7.06). "
        "Both bounds ignore the run's fixed costs (reading, indexes, git commit), which the "
        "measured time includes.",
        "",
        "Calls/s is the rate the run sustained (N / wall); overhead per call is "
        "(wall - ideal) / N x C, the time each call cost beyond the model's delay when the "
        "slots are full (at 1 in flight, the serial cost of one call). Listen overflows is "
        "the kernel's machine-wide counter during the runs (other processes included).",
        "",
        "| in flight | docs | s/call | wall s (median) | range s | docs/s | calls | calls/s | "
        "ideal s | efficiency | fractional ideal s | efficiency (fractional) | "
        "overhead per call ms | max in flight | listen overflows |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in all_runs:
        lines.append(
            f"| {r.concurrency} | {r.docs} | {r.delay:g} | {r.wall_s:.2f} | "
            f"{min(r.walls):.2f}-{max(r.walls):.2f} | {r.docs / r.wall_s:.2f} | {r.calls} | "
            f"{r.calls / r.wall_s:.1f} | {r.ideal_s:.2f} | **{r.efficiency:.2f}** | "
            f"{r.fluid_ideal_s:.2f} | {r.fluid_efficiency:.2f} | "
            f"{(r.wall_s - r.ideal_s) / r.calls * r.concurrency * 1000:.0f} | "
            f"{r.max_in_flight} | {r.overflows} |"
        )
    lines += [
        "",
        "Where the time of the median run went (seconds from the start of the run, from the "
        "server's arrival times): the first call; the spread of the first round (from the "
        "first call to the one that filled the last slot: each slot's next call follows its "
        "own reply, so the rounds after keep it); the last extract/classify reply; the first "
        "write call (the write stage starts only when every source is extracted and "
        "classified); the last write reply; what followed it (indexes, state.db, git "
        "commit); and the mean number of calls in flight (N x d / wall).",
        "",
        "| in flight | docs | s/call | first call | first round spread | last prepare reply | "
        "first write call | gap at stage barrier | last write reply | after last reply | "
        "mean in flight |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in all_runs:
        t = r.timeline()
        lines.append(
            f"| {r.concurrency} | {r.docs} | {r.delay:g} | {t.get('first_call_s', 0):.2f} | "
            f"{t.get('first_round_spread_s', 0):.2f} | {t.get('last_prepare_reply_s', 0):.2f} | "
            f"{t.get('first_write_call_s', 0):.2f} | "
            f"{t.get('barrier_gap_s', 0):.2f} | {t.get('last_write_reply_s', 0):.2f} | "
            f"{t.get('tail_after_last_reply_s', 0):.2f} | {t.get('mean_in_flight', 0):.1f} |"
        )
    lines += [
        "",
        "### Model use per document",
        "",
        "Prompt tokens are what the fake server counts (characters of the JSON-encoded "
        "messages / 4); prompt characters are the characters of the message contents sent; "
        "source characters are those of the files compiled.",
        "",
        "| in flight | docs | calls/doc | extract | classify | write | prompt tokens/doc | "
        "completion tokens/doc | prompt chars/doc | prompt chars per source char |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in all_runs:
        st = r.stages
        lines.append(
            f"| {r.concurrency} | {r.docs} | {r.per_doc(r.calls):.2f} | {st.get('extract', 0)} | "
            f"{st.get('classify', 0)} | {st.get('write', 0) + st.get('patch', 0)} | "
            f"{r.per_doc(r.prompt_tokens):,.0f} | {r.per_doc(r.completion_tokens):,.0f} | "
            f"{r.per_doc(r.prompt_chars):,.0f} | {r.prompt_chars / r.source_chars:.1f}x |"
        )
    s1 = one.stages
    lines += [
        "",
        f"One source alone ({args.one_doc}, {one.source_chars:,} characters, one chunk) into "
        f"a fresh knowledge base: **{one.calls} calls** (extract {s1.get('extract', 0)}, "
        f"classify {s1.get('classify', 0)}, write {s1.get('write', 0) + s1.get('patch', 0)}), "
        f"{one.created} article created, {one.prompt_tokens:,} prompt tokens, "
        f"{one.prompt_chars:,} prompt characters ({one.prompt_chars / one.source_chars:.1f}x "
        f"the source), {one.wall_s:.2f} s at {one.delay:g} s per call.",
        "",
    ]
    if into_wiki is not None:
        w = into_wiki
        model_s = 3 * w.delay
        lines += [
            "### One note into a large wiki",
            "",
            f"bench/ask's synthetic wiki of {w.articles:,} articles, copied in and committed to "
            "git, then one new note at a time compiled into it (16 in flight, the same fake "
            f"model at {w.delay:g} s per call), as a team adds a note to a grown wiki. The "
            f"first compile after the copy reads every article once to check the indexes: "
            f"{w.first_s:.2f} s. Then {len(w.walls)} runs, one new note each:",
            "",
            "| articles | calls | model time s | wall s (median) | range s | beside the model s "
            "| first request at s | after the last reply s |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|",
            f"| {w.articles:,} | {max(w.calls)} | {model_s:.2f} | "
            f"{statistics.median(w.walls):.2f} | {min(w.walls):.2f}-{max(w.walls):.2f} | "
            f"{statistics.median(w.walls) - model_s:.2f} | "
            f"{statistics.median(w.first_call_s):.2f} | {statistics.median(w.tail_s):.2f} |",
            "",
            "Beside the model: loading and ranking the catalog runs alongside the extract "
            "call; after the last reply come the indexes (rewritten whole: a "
            f"{w.articles:,}-line master index), the git commit and the search index.",
            "",
        ]
    if noop is not None:
        lines += [
            "### No-op re-run",
            "",
            f"{noop.sources:,} small synthetic notes compiled once (delay 0, 16 in flight: "
            f"{noop.seed_calls:,} calls, {noop.seed_wall_s:.1f} s), then compiled again "
            "unchanged. The process figure is the wall time of a whole `kb-ai --kb DIR compile "
            "NOTES --json --concurrency 16` process, as a user runs it (Python start-up "
            f"included), over {len(noop.process_s)} runs; the in-process figure is "
            "`Compiler.compile_paths` alone in a warm interpreter.",
            "",
            "| measure | median s | min s | max s | model calls |",
            "|---|---:|---:|---:|---:|",
            f"| `kb-ai compile` process | **{statistics.median(noop.process_s):.2f}** | "
            f"{min(noop.process_s):.2f} | {max(noop.process_s):.2f} | "
            f"{max(noop.process_calls)} (server saw {noop.server_requests_during}) |",
            f"| `compile_paths` in process | {statistics.median(noop.in_process_s):.2f} | "
            f"{min(noop.in_process_s):.2f} | {max(noop.in_process_s):.2f} | "
            f"{max(noop.in_process_calls)} |",
            f"| `python -c pass` | {noop.python_startup_s:.2f} | | | |",
            f"| `kb-ai --help` | {noop.help_s:.2f} | | | |",
            "",
            f"Every re-run reported {min(noop.process_skipped):,} of {noop.sources:,} sources "
            "unchanged.",
            "",
        ]
    if diagnosis is not None:
        from bench.compile.diagnose import variant_table

        rows, costs, (p_wall, p_cpu, p_calls, p_rows) = diagnosis
        lines += [
            "### Diagnosis: where the time beyond the model goes",
            "",
            f"The same {runs[0].docs} records at {top} in flight, {args.delay:g} s per call, "
            f"median of {args.runs} runs per variant: the LLM transport (litellm, which hosted "
            "providers go through, or the plain aiohttp transport the CLI uses for an "
            "OpenAI-compatible endpoint: `transport = 'http'`) x where the "
            "client keeps its response cache and call log (state.db as the CLI does, or "
            "memory: `db_path=None`) x where the fake server runs (a thread of the bench "
            "process, sharing its GIL, or a process of its own). Overhead per round = "
            "(wall - ideal) / max(ceil(N / C), 3).",
            "",
            *variant_table(rows, args.delay, top),
            "",
            "Cost of one response-cache / call-log operation on this disk (`CallStore`, one "
            f"connection kept open): get {costs['get']:.2f} ms, put {costs['put']:.2f} ms, log "
            f"{costs['log']:.2f} ms. Every model call does a get, a put and a log, in the "
            "store's own thread: the event loop awaits the get and never waits for the writes.",
            "",
            f"The event loop thread's time in one CLI-like run (the default transport, state.db, "
            f"server in a thread; {top} in flight, {args.delay:g} s per call) under cProfile, by "
            f"category (tottime): wall {p_wall:.2f} s (profiler included), CPU time of the "
            f"loop thread {p_cpu:.2f} s, {p_calls} calls. Everything but the first row "
            "blocks the loop: while it runs, no reply is taken in and no request is sent.",
            "",
            "| category | s | ms per call |",
            "|---|---:|---:|",
            *(f"| {name} | {secs:.2f} | {secs / p_calls * 1000:.1f} |" for name, secs in p_rows),
            "",
        ]
    lines += ["### Targets", ""]
    lines.append(
        f"- Efficiency >= {TARGET_EFFICIENCY} at {best.concurrency} in flight "
        f"({best.delay:g} s per call, {best.docs} docs): "
        f"**{verdict(best.efficiency >= TARGET_EFFICIENCY)}** ({best.efficiency:.2f}; "
        f"{best.fluid_efficiency:.2f} against the fractional bound)."
        + "".join(f" With {r.docs} docs at {r.delay:g} s: {r.efficiency:.2f}." for r in extra)
    )
    one_ok = one.calls <= TARGET_CALLS_ONE_DOC and one.created == 1
    lines.append(
        f"- At most {TARGET_CALLS_ONE_DOC} LLM calls for a one-chunk source that creates one "
        f"article: **{verdict(one_ok)}** ({one.calls} calls, {one.created} article)."
    )
    if noop is not None:
        med = statistics.median(noop.process_s)
        ok = (
            med < TARGET_NOOP_S
            and max(noop.process_calls) == 0
            and noop.server_requests_during == 0
        )
        lines.append(
            f"- No-op re-run of {noop.sources:,} sources under {TARGET_NOOP_S:g} s with 0 calls: "
            f"**{verdict(ok)}** ({med:.2f} s median for the process, "
            f"{max(noop.process_calls)} calls)."
        )
    lines.append("")
    return "\n".join(lines)


def describe(run: Run) -> str:
    timeline = {k: round(v, 2) for k, v in run.timeline().items()}
    return (
        f"{run.concurrency:>3} in flight, {run.docs} docs, {run.delay:g} s/call: "
        f"{run.wall_s:.2f} s median of {[round(w, 2) for w in run.walls]} "
        f"({run.docs / run.wall_s:.2f} docs/s), {run.calls} calls, ideal {run.ideal_s:.2f} s, "
        f"efficiency {run.efficiency:.2f} (fractional {run.fluid_efficiency:.2f}), "
        f"max in flight {run.max_in_flight}, listen overflows {run.overflows}, "
        f"load {run.load:.1f}, timeline {json.dumps(timeline)}"
    )
