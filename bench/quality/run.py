"""Quality benchmark, compile side: how much of what a faulty model writes is caught
before it reaches the wiki.

    python -m bench.quality.run               # writes docs/benchmarks-quality.md
    python -m bench.quality.run --quick       # one seed, prints only

The model is tests/fakes' OpenAI-compatible server (real HTTP on loopback) answering with
kb_responder's replies, spoiled at a set rate by bench.quality.faults (seeded: each
reply's fault depends only on the seed and the request). The pipeline is the real one,
through the default LLM client. Each seed compiles the decision records in --adr-dir
(read in place) into a fresh knowledge base; afterwards every spoiled reply's marker is
looked for in wiki/ (article bodies and summaries): found means it reached the wiki.
A clean run (rate 0) shows what the checks cost when nothing is wrong.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from bench.quality.faults import (
    CLASSIFY_FAULTS,
    EXTRACT_FAULTS,
    MECHANICAL,
    WRITE_FAULTS,
    Fault,
    FaultyResponder,
)
from tests.fakes.openai_server import FakeOpenAIServer

REPO = Path(__file__).resolve().parents[2]
ADR_DIR = REPO.parent / "shared" / "data" / "adr_govuk"
DOC = REPO / "docs" / "benchmarks-quality.md"
SECTION_START = "<!-- compile: bench.quality.run -->"
SECTION_END = "<!-- /compile -->"


@dataclass
class Outcome:
    seed: int
    rate: float
    wall_s: float
    calls: int
    sources: int
    compiled: int
    failed: int
    articles: int
    checks: list[str]
    faults: list[tuple[Fault, bool]] = field(default_factory=list)  # (fault, reached)


def _flat(text: str) -> str:
    return " ".join(text.split()).lower()


def compile_once(adr: Path, work: Path, rate: float, seed: int) -> Outcome:
    from compiler import Compiler
    from kb_ai.settings import load_settings
    from wiki import KnowledgeBase, list_articles, read_article

    responder = FaultyResponder(rate, seed)
    kb_dir = work / f"kb-{seed}-{rate}"
    if kb_dir.exists():
        shutil.rmtree(kb_dir)
    kb = KnowledgeBase.init(kb_dir)
    paths = sorted(p for p in adr.iterdir() if p.suffix == ".md")
    with FakeOpenAIServer(responder=responder) as server:
        settings = load_settings(
            kb_dir,
            {"model": "openai/fake", "api_base": server.base_url, "api_key": "x"},
            environ={},
        )
        started = time.monotonic()
        result = asyncio.run(Compiler(kb, settings).compile_paths(paths))
        wall = time.monotonic() - started
    articles = [read_article(kb, p) for p in list_articles(kb)]
    outcome = Outcome(
        seed=seed,
        rate=rate,
        wall_s=wall,
        calls=responder.calls,
        sources=len(paths),
        compiled=len(result.compiled),
        failed=len(result.failed),
        articles=len(articles),
        checks=list(result.checks),
    )
    failed_errors = " ".join(f.error for f in result.failed)
    for fault in responder.faults:
        outcome.faults.append((fault, reached(fault, articles, failed_errors)))
    return outcome


def reached(fault: Fault, articles: list, failed_errors: str) -> bool:
    """Whether the spoiled reply's marker is in the wiki after the run."""
    wiki = _flat("\n".join(f"{a.summary}\n{a.body}" for a in articles))
    mine = [a for a in articles if _flat(a.title) == _flat(fault.title)]
    m = fault.marker
    kind = fault.kind
    if kind == "repetition":
        return any(_flat(a.body).count(_flat(m["repeated"])) > 1 for a in mine)
    if kind == "html":
        from kb_ai.grounding import is_html

        return any(is_html(a.body) or "<markdown" in a.body for a in articles)
    if kind == "pasted_summary":  # (the material itself may say it three times)
        return any(_flat(a.body).count(_flat(m["pasted"])) > 5 for a in mine)
    if kind == "cut_text":
        return _flat(m["tail"]) in wiki
    if kind in ("unknown_number", "unknown_number_extract"):
        number = m["number"]
        return number in "\n".join(a.body + a.summary for a in articles) or (
            re.search(rf"(?<!\d){number.replace(',', '')}(?!\d)", wiki) is not None
        )
    if kind == "outside_name":
        return m["name"].split()[-1].lower() in wiki
    if kind == "cut_summary":
        return any(_flat(a.summary) == _flat(m["summary"]) for a in articles)
    if kind == "empty_path_update":
        return "path" in failed_errors and "proposed" in failed_errors
    if kind == "generic_articles":
        generic = {_flat(w) for w in m["generic"]}
        return any(_flat(a.title) in generic for a in articles)
    if kind == "cut_list":  # (a source whose article was refused lost nothing to a cut)
        return bool(mine) and any(_flat(item) not in wiki for item in m["missing"])
    if kind == "cut_facts":  # each number or date the lost facts stated, anywhere in wiki/
        from kb_ai.grounding import Evidence

        found = Evidence("\n".join(f"{a.summary}\n{a.body}" for a in articles))
        lost = [c for f in m["lost"] for c in found.unsupported(f) if c.kind in ("number", "date")]
        return bool(mine) and bool(lost)
    if kind == "negation_flip":
        return _flat(m["flipped"]) in wiki
    raise ValueError(f"unknown fault {kind}")


def summarise(outcomes: list[Outcome]) -> dict[str, tuple[int, int]]:
    """fault kind -> (injected, caught)."""
    injected: Counter[str] = Counter()
    caught: Counter[str] = Counter()
    for o in outcomes:
        for fault, got_in in o.faults:
            injected[fault.kind] += 1
            caught[fault.kind] += not got_in
    return {k: (injected[k], caught[k]) for k in injected}


def report(faulty: list[Outcome], clean: Outcome, rate: float, adr: Path, load: str) -> str:
    table = summarise(faulty)
    order = [*WRITE_FAULTS, *CLASSIFY_FAULTS, *EXTRACT_FAULTS]
    stage = {**dict.fromkeys(WRITE_FAULTS, "write"), **dict.fromkeys(CLASSIFY_FAULTS, "classify")}
    stage.update(dict.fromkeys(EXTRACT_FAULTS, "extract"))
    rows = []
    for kind in order:
        if kind not in table:
            continue
        n, ok = table[kind]
        target = "1.0" if kind in MECHANICAL else "reported"
        rows.append(f"| {kind} | {stage[kind]} | {n} | {ok} | {ok / n:.2f} | {target} |")
    mech_n = sum(table[k][0] for k in MECHANICAL if k in table)
    mech_ok = sum(table[k][1] for k in MECHANICAL if k in table)
    all_n = sum(n for n, _ in table.values())
    all_ok = sum(ok for _, ok in table.values())
    seeds = ", ".join(str(o.seed) for o in faulty)
    runs = "\n".join(
        f"| {o.seed} | {len(o.faults)} | {o.calls} | {o.compiled} | {o.failed} | "
        f"{o.articles} | {len(o.checks)} | {o.wall_s:.1f} |"
        for o in faulty
    )
    clean_kinds = Counter(
        "removed passages"
        if "removed" in c
        else "summary from the body"
        if "summary" in c
        else "HTML converted"
        if "HTML" in c
        else "other"
        for c in clean.checks
    )
    clean_line = ", ".join(f"{v} {k}" for k, v in sorted(clean_kinds.items())) or "none"
    return f"""{SECTION_START}
## Compile: faults caught before the wiki

`python -m bench.quality.run` ({datetime.now(UTC).date().isoformat()}; load average
{load}; Python {platform.python_version()}). The {clean.sources} decision records of
`{adr.name}` compiled {len(faulty)} times (seeds {seeds}) into a fresh knowledge base
each, by the real pipeline and LLM client against the stand-in server of `tests/fakes`,
whose replies bench/quality/faults.py spoils: each extract, classify and write reply
with probability {rate}, by one fault of its stage drawn at random (seeded by the
request, so a retry is a new draw). A fault counts as caught when its marker (the
repeated paragraph, the HTML, the invented number or name, the cut tail, the cut
summary, the generic title, the lost list items, the numbers and dates of the facts
past the fifth, the flipped sentence) is nowhere in
wiki/ after the run: removed, repaired, or the article refused.

| fault | stage | injected | caught | share | target |
|---|---|---|---|---|---|
{chr(10).join(rows)}

Mechanical faults (repetition, HTML, pasted summary, cut text, unknown numbers):
{mech_ok} of {mech_n} caught ({mech_ok / max(mech_n, 1):.2f}); all faults: {all_ok} of
{all_n} ({all_ok / max(all_n, 1):.2f}).

| seed | faults | model calls | compiled | failed (refused) | articles | check notes in log.md | wall s |
|---|---|---|---|---|---|---|---|
{runs}

The same corpus with no fault (rate 0): {clean.compiled} of {clean.sources} sources
compiled, {clean.failed} failed, {clean.articles} articles, {clean.calls} model calls,
{clean.wall_s:.1f} s; what the checks changed in replies that had nothing wrong with
them: {clean_line} (the stand-in's summaries are the first sentence cut at 200
characters, which the checks replace by whole sentences from the body).
{SECTION_END}
"""


def write_doc(section: str) -> None:
    head = (
        "# Quality benchmarks\n\nWhat the checks between the model and the wiki (issue 13) "
        "catch, measured against stand-in models that misbehave on purpose.\n\n"
    )
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else head
    if SECTION_START in text:
        before, _, rest = text.partition(SECTION_START)
        _, _, after = rest.partition(SECTION_END)
        text = before + section.strip() + after
    else:
        text = text.rstrip() + "\n\n" + section.strip() + "\n"
    DOC.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adr-dir", type=Path, default=ADR_DIR)
    parser.add_argument("--rate", type=float, default=0.5)
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--quick", action="store_true", help="one seed, print only")
    args = parser.parse_args(argv)
    if not args.adr_dir.is_dir():
        print(f"no corpus at {args.adr_dir}", file=sys.stderr)
        return 2
    seeds = [1] if args.quick else list(range(1, args.seeds + 1))
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    with tempfile.TemporaryDirectory(prefix="kb-quality-") as tmp:
        work = Path(tmp)
        faulty = []
        for seed in seeds:
            outcome = compile_once(args.adr_dir, work, args.rate, seed)
            faulty.append(outcome)
            print(
                f"seed {seed}: {len(outcome.faults)} faults, "
                f"{sum(r for _, r in outcome.faults)} reached the wiki, "
                f"{outcome.failed} sources failed, {outcome.wall_s:.1f} s",
                file=sys.stderr,
            )
        clean = compile_once(args.adr_dir, work, 0.0, 0)
    section = report(faulty, clean, args.rate, args.adr_dir, load)
    print(section)
    for o in faulty:
        for fault, got_in in o.faults:
            if got_in:
                print(f"reached: seed {o.seed} {fault.kind} {fault.title!r} {fault.marker}")
    if not args.quick:
        write_doc(section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
