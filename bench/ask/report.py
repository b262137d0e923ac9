"""The ask benchmark's page (docs/benchmarks-ask.md) from its measurements."""

from __future__ import annotations

import os
import platform
import statistics
from datetime import UTC, datetime

TARGET_OWN_MS = 50.0
TARGET_OWN_SIZE = 10_000
TARGET_PROCESS_S = 2.0


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))]


def render(
    builds: dict[int, dict], own: list[dict], proc: dict | None, quick: bool, load: float
) -> str:
    import sqlite3 as _sqlite

    lines = [
        "## Ask: selection prompt, own time, whole process",
        "",
        f"{datetime.now(UTC).date().isoformat()}; Python {platform.python_version()}, SQLite "
        f"{_sqlite.sqlite_version}, {platform.machine()}, {os.cpu_count()} CPUs (1-minute load "
        f"average {load:.1f} when timing began; other work shares the machine); warm OS page "
        f"cache. `python -m bench.ask.run{' --quick' if quick else ''}` (bench/ask/run.py).",
        "",
        "Synthetic wikis: six article types; titles from a made-up project name plus Zipf-drawn "
        "words (common software-team words, then jargon growing with the wiki); summaries of "
        "100-130 characters; tags; keys from a settings table in 40% of articles; bodies of "
        "about 120-350 words with 1-3 [[wikilinks]] (so the second hop runs); 12 body-only "
        '"needle" facts per wiki. Not committed to git (ask reads no git).',
        "",
        "| articles | written by | write (s) | master index | catalog tokens | search index (s) | state.db |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in own:
        b = builds[r["size"]]
        lines.append(
            f"| {r['size']:,} | {b['write']} | {b['write_s']:.1f} | {b['master_index_bytes'] / 1e6:.2f} MB "
            f"| {r['catalog_tokens']:,} | {b['search_index_s']:.1f} | {b['state_db_bytes'] / 1e6:.0f} MB |"
        )
    n = len(own[0]["rows"]) if own else 0
    lines += [
        "",
        "### Selection prompt and own time per question",
        "",
        f"{n} questions per size (12 body-only facts, 5 about a title, 3 vague, 2 not covered, "
        "one of them in Chinese), each through `retrieval.ask()` with an in-process fake model "
        "that answers at once (3 pages picked, 1 more on the second hop, an answer citing the "
        "first page). Own time = wall time of `ask()` minus the time inside the fake's "
        "`complete`/`stream`. Each size runs in a fresh process: *first* is its first question "
        "(one-time costs: template compilation, SQLite connection and page cache, lazy "
        "imports), *steady* the other questions. Prompt tokens: `estimate_tokens` of the "
        "select messages (what the budget is checked with) and tiktoken cl100k_base. A question "
        "no article shares a word with gets 0 candidates and is answered as not covered "
        "without a model call.",
        "",
        "| articles | shortlisted | candidates min / median | target in candidates | prompt tokens, estimate (max) | cl100k (max) | cl100k / estimate | budget |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in own:
        rows = r["rows"]
        targeted = [x for x in rows if x["target_in_candidates"] is not None]
        cl = [x["tokens_cl100k"] for x in rows if x["tokens_cl100k"] is not None]
        ratio = (
            f"{statistics.median(x['tokens_cl100k'] / x['tokens_estimate'] for x in rows):.2f}"
            if cl
            else "n/a"
        )
        lines.append(
            f"| {r['size']:,} | {sum(x['shortlisted'] for x in rows)}/{len(rows)} "
            f"| {min(x['candidates'] for x in rows)} / {statistics.median(x['candidates'] for x in rows):.0f} "
            f"| {sum(x['target_in_candidates'] for x in targeted)}/{len(targeted)} "
            f"| {max(x['tokens_estimate'] for x in rows):,} | {f'{max(cl):,}' if cl else 'n/a'} "
            f"| {ratio} | {r['budget']:,} |"
        )
    lines += [
        "",
        "Own time per question, and its parts measured again after each question (untimed "
        "there): `Catalog.load`, `Asker.selection_prompt` (shortlist search + prompt), "
        "`read_page` of the pages read; *fake model* is the time subtracted. *CPU* is the "
        "process CPU time of the same steady questions (`time.process_time`, fake's share "
        "subtracted): less sensitive than wall time to other work on the machine.",
        "",
        "| articles | first (ms) | steady p50 (ms) | p95 (ms) | max (ms) | CPU p50 (ms) | CPU p95 (ms) | Catalog.load p50 (ms) | selection_prompt p50 (ms) | read pages p50 (ms) | fake model p50 (ms) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in own:
        rows = r["rows"]
        steady = [x["own_ms"] for x in rows[1:]]
        cpu = [x["own_cpu_ms"] for x in rows[1:]]
        lines.append(
            f"| {r['size']:,} | {rows[0]['own_ms']:.1f} | {statistics.median(steady):.1f} "
            f"| {pct(steady, 95):.1f} | {max(steady):.1f} "
            f"| {statistics.median(cpu):.1f} | {pct(cpu, 95):.1f} "
            f"| {statistics.median(x['catalog_load_ms'] for x in rows):.1f} "
            f"| {statistics.median(x['selection_prompt_ms'] for x in rows):.1f} "
            f"| {statistics.median(x['read_pages_ms'] for x in rows):.1f} "
            f"| {statistics.median(x['model_ms'] for x in rows):.2f} |"
        )
    lines += [
        "",
        "Importing kb-ai's ask path (`retrieval`, `kb_ai.settings`, `wiki`) in the "
        "fresh process, before the first question: "
        + ", ".join(f"{r['import_ms']:.0f} ms ({r['size']:,})" for r in own)
        + ".",
    ]
    if proc:
        runs = len(next(iter(proc["ask"].values()))["walls"]) if proc["ask"] else 0
        lines += [
            "",
            "### Whole `kb-ai ask` process",
            "",
            f"`kb-ai --kb DIR ask --json QUESTION` as a subprocess, {runs} run(s) per size after "
            "one warm-up, each a different question (the response cache never answers: every "
            "run reached the server), against tests/fakes' FakeOpenAIServer on loopback with "
            "kb_responder (real HTTP, OpenAI wire format, no delay). Env KB_AI_MODEL=openai/fake, "
            "KB_AI_API_BASE, KB_AI_API_KEY: the plain-httpx fast path. *Fake model* is the "
            "time the responder spent building its replies, inside the wall time.",
            "",
            "| command | articles | median (s) | min (s) | max (s) | fake model median (ms) | litellm imported |",
            "|---|---|---|---|---|---|---|",
        ]
        for size, r in proc["ask"].items():
            w = r["walls"]
            lines.append(
                f"| `kb-ai ask --json` | {int(size):,} | {statistics.median(w):.2f} | {min(w):.2f} "
                f"| {max(w):.2f} | {statistics.median(r['model']) * 1e3:.0f} "
                f"| {'yes' if r['imports']['litellm'] else 'no'} |"
            )
        for label, key in (("`kb-ai --help`", "help"), ("`python -c pass`", "python")):
            w = proc[key]
            lines.append(
                f"| {label} | - | {statistics.median(w):.2f} | {min(w):.2f} | {max(w):.2f} | - | - |"
            )
        lines.append(
            f'| `python -c "import openai"` (once) | - | {proc["import_openai"]:.2f} | | | - | - |'
        )
        lines.append(
            f'| `python -c "import litellm"` (once) | - | {proc["import_litellm"]:.2f} | | | - | yes |'
        )
        first = next(iter(proc["ask"].items()))
        top = ", ".join(f"{name} {s * 1e3:.0f} ms" for name, s in first[1]["imports"]["top"][:6])
        lines += [
            "",
            f"Imports of one `kb-ai ask` process ({int(first[0]):,} articles, "
            f"`python -X importtime`, top level, cumulative): {top}; all top-level imports "
            f"{first[1]['imports']['total_s'] * 1e3:.0f} ms.",
        ]
    lines += ["", "### Targets", ""]
    within = all(x["tokens_estimate"] <= r["budget"] for r in own for x in r["rows"])
    worst = max((x["tokens_estimate"], r["size"]) for r in own for x in r["rows"])
    counted = [
        (x["tokens_cl100k"], r["size"]) for r in own for x in r["rows"] if x["tokens_cl100k"]
    ]
    line = (
        f"- Selection prompt within the budget ({own[0]['budget']:,} tokens) at every size: "
        f"**{'met' if within else 'not met'}** as kb-ai counts (`estimate_tokens`): largest "
        f"{worst[0]:,} ({worst[1]:,} articles)."
    )
    if counted:
        over = sorted({size for n, size in counted if n > own[0]["budget"]})
        top = max(counted)
        line += (
            f" Counted with cl100k_base: **{'not met' if over else 'met'}**; largest "
            f"{top[0]:,} ({top[1]:,} articles)"
            + (
                f", over the budget at {', '.join(f'{s:,}' for s in over)} articles."
                if over
                else "."
            )
        )
    lines.append(line)
    at = next((r for r in own if r["size"] == TARGET_OWN_SIZE), None)
    if at:
        steady = [x["own_ms"] for x in at["rows"][1:]]
        p95 = pct(steady, 95)
        cpu = [x["own_cpu_ms"] for x in at["rows"][1:]]
        lines.append(
            f"- Own time under {TARGET_OWN_MS:.0f} ms at {TARGET_OWN_SIZE:,} articles (wall, "
            f"steady p95): **{'met' if p95 < TARGET_OWN_MS else 'not met'}**; steady p50 "
            f"{statistics.median(steady):.1f} ms, p95 {p95:.1f} ms, max {max(steady):.1f} ms "
            f"(CPU p50 {statistics.median(cpu):.1f} ms, p95 {pct(cpu, 95):.1f} ms); first "
            f"question {at['rows'][0]['own_ms']:.1f} ms."
        )
    else:
        lines.append(f"- Own time at {TARGET_OWN_SIZE:,} articles: not measured in this run.")
    if proc and proc["ask"]:
        worst_p = max((statistics.median(r["walls"]), int(s)) for s, r in proc["ask"].items())
        lines.append(
            f"- Whole `kb-ai ask` under {TARGET_PROCESS_S:.0f} s: "
            f"**{'met' if worst_p[0] < TARGET_PROCESS_S else 'not met'}**; slowest median "
            f"{worst_p[0]:.2f} s ({worst_p[1]:,} articles)."
        )
    return "\n".join(lines) + "\n"
