"""Does ask decline what the wiki does not cover, and still answer what it does?

The sets (bench/ask/coverage_sets.py, built from ../shared/data): for each, one wiki of
every paragraph its questions come with (gold and distractors, one article each, no
model compile), less the gold paragraphs of every other question: those questions are
*uncovered* (their distractors, which share many of their words, are in the wiki; what
answers them is not), the rest are *covered* (every gold paragraph kept). A covered
question whose gold paragraph is also another's removed gold is dropped.

Development (--tune: the gate off, thresholds swept): HotpotQA-100 and MuSiQue-50, both
halves. Held-out (the default, reported): fresh questions no bench asked before, MuSiQue's
single-hop sub-questions and CMRC 2018's Chinese trial questions. Each question is
asked through the product's path (retrieval.ask, the extractive small-model path) with
a stand-in model: selection picks the first pages offered (the lexical search order),
the sentence pick takes the first two sentences offered (as the 0.5B model mostly
does), follow-ups say "enough". The coverage decision needs no model judgement, so the
stand-in only decides which sentences are quoted.

Outcomes: covered question answered with its gold answer in the answer (right answer),
covered question declined (lost), covered question answered without it (wrong answer);
uncovered question declined (right abstention), answered (wrong answer).

    python bench/ask/coverage.py --tune          # the development sets, thresholds swept
    python bench/ask/coverage.py --threshold 0   # the gate off, held-out sets
    python bench/ask/coverage.py                 # the shipped threshold, held-out sets

The coverage judge (retrieval/judge.py), ``--judge MODEL``: each question the evidence
check lets through is also put to the judge (local/default, local/<file.gguf>, any model
kb-ai names; ``oracle``: a stand-in that knows the gold answer and says a sentence shown
answers exactly when it states it, the ceiling of the sentences shown; ``stand-in``: the
tests' stand-in, tests/fakes/kb_responder.judge). The stand-in still selects and picks,
so the answer quoted is the one the gate let through; the judge only decides whether it
is given (as in retrieval/ask.py, where it sits between the evidence check and the
answer). ``--half dev`` judges the development half of a held-out construction (tuning),
the default its held-out half:

    python bench/ask/coverage.py --sets hops-own --judge local/default --half dev
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

OUT = ROOT / "bench" / "out" / "ask" / "coverage"


def build(kb_dir: Path, questions: list[dict]) -> None:
    from wiki import Article, KnowledgeBase, build_catalog, open_state, write_article
    from wiki.catalog import write_indexes
    from wiki.indexing import refresh_search_index

    if kb_dir.exists():
        shutil.rmtree(kb_dir)
    kb = KnowledgeBase.init(kb_dir)
    removed = set().union(*(q["gold"] for q in questions if q["uncovered"]))
    seen: set[tuple[str, str]] = set()
    for q in questions:
        for para in q["paragraphs"]:
            if para in seen or para in removed or not para[1]:
                continue
            seen.add(para)
            end = para[1].find(". ")
            summary = (para[1] if end < 0 else para[1][: end + 1])[:190]
            write_article(
                kb,
                Article(f"wiki/entity/p{len(seen):05d}.md", para[0][:80], "entity", summary, [],
                        ["raw/set.md"], "2026-01-01", "2026-01-01", para[1] + "\n"),
            )  # fmt: skip
    write_indexes(kb, build_catalog(kb))
    with closing(open_state(kb)) as conn:
        refresh_search_index(kb, conn)


def stand_in(stage: str, messages: list[dict], schema: dict | None) -> Any:
    props = (schema or {}).get("properties", {})
    if "paths" in props:
        return {"paths": props["paths"]["items"]["enum"][: props["paths"].get("maxItems", 6)]}
    if "sentences" in props:
        return {"sentences": props["sentences"]["items"]["enum"][:2]}
    if "enough" in props:
        return {"enough": True, "search": []}
    return "The wiki does not cover this question."


def oracle(gold: list[str]):
    """A judge that knows the gold answer: the first sentence shown that states it."""
    import re

    def reply(stage: str, messages: list[dict], schema: dict | None) -> Any:
        shown = re.findall(r'^(\d+)\. \(from ".*?"\) (.+)$', messages[-1]["content"], re.M)
        for n, text in shown:
            for g in gold:
                if g and right(text, [g]):
                    return {"answer": g, "sentence": n}
        return {"answer": "none", "sentence": "none"}

    return reply


def kb_stand_in(stage: str, messages: list[dict], schema: dict | None) -> Any:
    from tests.fakes.kb_responder import judge

    return judge(
        {"messages": messages, "response_format": {"type": "json_object", "schema": schema}}
    )


def right(answer: str, gold: list[str]) -> bool:
    from bench.ask.coverage_sets import _states

    return _states(answer, gold)


async def run_set(
    name: str,
    questions: list[dict],
    threshold: float,
    half: str,
    model: str | None = None,
    sample: int = 0,
    judge_model: str | None = None,
) -> list[dict]:
    """Ask the set's questions of ``half``; with ``model`` (e.g. local/default), that
    model instead of the stand-in, on the first ``sample`` covered and uncovered ones;
    with ``judge_model``, each question the evidence check lets through put to it."""
    from kb_ai.llm import open_llm
    from kb_ai.settings import load_settings
    from retrieval import ask
    from retrieval.coverage import measure
    from retrieval.pages import read_page
    from tests.fakes.fake_llm import FakeLLM
    from wiki import KnowledgeBase

    kb_dir = OUT / name
    build(kb_dir, questions)
    kb = KnowledgeBase.open(kb_dir)
    overrides = {"model": model or "fake/model", "coverage_threshold": threshold}
    overrides["coverage_judge"] = "off"  # asked below, beside the answer (see the module)
    if not model:
        overrides["small_model"] = True
    settings = load_settings(kb_dir, overrides, detect=False)
    asked = [q for q in questions if half == "all" or q["half"] == half]
    if sample:
        asked = [q for q in asked if q["uncovered"]][:sample] + [
            q for q in asked if not q["uncovered"]
        ][:sample]
    rows = []
    for q in asked:
        started = time.monotonic()
        load = os.getloadavg()[0]
        if model:
            llm = open_llm(settings, db_path=kb.state_db)
            try:
                answer = await ask(kb, settings, llm, q["question"])
            finally:
                await llm.aclose()
        else:
            answer = await ask(kb, settings, FakeLLM(stand_in), q["question"])
        seconds = round(time.monotonic() - started, 1)
        pages = [read_page(kb, p, settings.read_chars) for p in answer.read]
        query = answer.hops[0].query if answer.hops else q["question"]
        gate = measure(query, pages) if pages else None
        judged = None
        if judge_model and gate is not None and gate.covered(threshold):
            judged = await judge_one(judge_model, kb, query, pages, q["answers"])
        rows.append(
            {"set": name, "half": q["half"], "uncovered": q["uncovered"], "judged": judged,
             "question": q["question"], "covered": answer.covered,
             "right": answer.covered and right(answer.answer, q["answers"]),
             "score": round(gate.score, 3) if gate else 0.0,
             "lacks": gate.lacks if gate else "",
             "answer": answer.answer[:300], "read": answer.read, "query": query,
             "answers": q["answers"], "seconds": seconds, "load": round(load, 1)}
        )  # fmt: skip
        if model:
            print(json.dumps(rows[-1], ensure_ascii=False)[:400], flush=True)
    return rows


_JUDGES: dict[str, Any] = {}


async def judge_one(judge_model: str, kb: Any, question: str, pages: list, gold: list[str]) -> dict:
    """The judge's verdict on one question (retrieval.judge, as ask.py calls it), with
    its reply, its seconds, the machine's load and where the gold answer is among the
    best sentences (``gold_at``: 1-based, 0 when none of the 8 best states it)."""
    from kb_ai.llm import open_llm
    from kb_ai.settings import load_settings
    from retrieval import judge
    from retrieval.picking import PROMPTS
    from tests.fakes.fake_llm import FakeLLM

    if judge_model == "oracle":
        llm = FakeLLM(oracle(gold))
    elif judge_model == "stand-in":
        llm = FakeLLM(kb_stand_in)
    else:
        if judge_model not in _JUDGES:
            settings = load_settings(kb.root, {"model": judge_model}, detect=False)
            _JUDGES[judge_model] = settings
        llm = open_llm(_JUDGES[judge_model])
    replies: list = []

    def paid(reply: Any) -> Any:
        replies.append(reply)
        return reply

    load = os.getloadavg()[0]
    started = time.monotonic()
    try:
        verdict = await judge.judge(llm, PROMPTS, question, pages, paid)
    finally:
        if hasattr(llm, "aclose"):
            await llm.aclose()
    best = judge.candidates(question, pages, 8)
    gold_at = next((i for i, s in enumerate(best, 1) if right(s.shown, gold)), 0)
    return {
        "answers": verdict.answers, "sentence": verdict.sentence, "answer": verdict.answer,
        "detail": verdict.detail, "shown": verdict.shown, "gold_at": gold_at,
        "seconds": round(time.monotonic() - started, 2), "load": round(load, 1),
        "reply": replies[0].text[:300] if replies else "",
        "prompt_tokens": replies[0].usage.prompt_tokens if replies else 0,
    }  # fmt: skip


def judged_covered(r: dict, rule: str = "judge") -> bool:
    """Whether the row counts as covered: the evidence check's decision, and with
    ``rule`` "judge" the judge's verdict too (no verdict: the check's stands); "loose":
    only the sentence it names (its answer unchecked)."""
    j = r.get("judged")
    if not r["covered"] or j is None or rule == "lexical":
        return r["covered"]
    if rule == "loose":
        return j["sentence"] not in ("none", "")
    return j["answers"] is not False


def outcomes(
    rows: list[dict], threshold: float | None = None, rule: str = "lexical"
) -> dict[str, int]:
    """Counts; with ``threshold``, as if the gate were at it (rows run with the gate off);
    with ``rule``, the judge's verdict applied as judged_covered says."""

    def covered(r: dict) -> bool:
        gated = threshold is not None and threshold > 0
        ok = judged_covered(r, rule)
        return ok and (not gated or (r["score"] >= threshold and not r["lacks"]))

    c = [r for r in rows if not r["uncovered"]]
    u = [r for r in rows if r["uncovered"]]
    return {
        "covered questions": len(c),
        "right answers": sum(covered(r) and r["right"] for r in c),
        "covered, answered without the gold answer": sum(covered(r) and not r["right"] for r in c),
        "covered, declined": sum(not covered(r) for r in c),
        "uncovered questions": len(u),
        "right abstentions": sum(not covered(r) for r in u),
        "wrong answers (uncovered, answered)": sum(covered(r) for r in u),
    }


def main() -> None:
    from retrieval.coverage import THRESHOLD

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument(
        "--tune", action="store_true", help="development sets, gate off, sweep thresholds"
    )
    ap.add_argument("--threshold", type=float, default=THRESHOLD)
    ap.add_argument("--model", help="a real model (e.g. local/default) instead of the stand-in")
    ap.add_argument("--sample", type=int, default=0, help="with --model: N covered + N uncovered")
    ap.add_argument("--sets", help="comma-separated set names (default: all of the kind)")
    ap.add_argument(
        "--judge",
        help="judge each question the evidence check lets through "
        "with this model (local/default, local/<file.gguf>, oracle, stand-in)",
    )
    ap.add_argument(
        "--half",
        choices=["dev", "held-out"],
        default="held-out",
        help="without --tune: the development sets at the shipped threshold",
    )
    ap.add_argument("--shown", type=int, help="sentences shown to the judge (default JUDGED)")
    args = ap.parse_args()
    from bench.ask.coverage_sets import DEV, DEV_ZH, FRESH, FRESH2, FRESH3, OWN, split

    if args.shown:
        from retrieval import judge

        judge.JUDGED = args.shown

    if args.half == "dev":
        args.tune = True
    half = "dev" if args.tune else "held-out"
    chosen = {**DEV, **DEV_ZH} if args.tune else {**FRESH, **FRESH2, **FRESH3}
    wanted = args.sets.split(",") if args.sets else [*chosen, *OWN]
    sets = {
        n: split(load(), half=half, fresh=not args.tune or n.startswith("cmrc"))
        for n, load in chosen.items()
        if n in wanted
    }
    threshold = 0.0 if args.tune and args.half != "dev" else args.threshold
    rows = []
    for name, questions in sets.items():
        rows += asyncio.run(
            run_set(name, questions, threshold, half, args.model, args.sample, args.judge)
        )
    for name, make in OWN.items():
        if name in wanted:  # one small wiki per group (see coverage_sets.hops_own)
            groups = make(half)
            if args.sample:  # the first N uncovered and N covered questions
                u = [g for g in groups if g[1][0]["uncovered"]][: args.sample]
                c = [(n, qs[:1]) for n, qs in groups if not qs[0]["uncovered"]][: args.sample]
                groups = u + c
            for wiki, questions in groups:
                got = asyncio.run(
                    run_set(wiki, questions, threshold, half, args.model, 0, args.judge)
                )
                rows += [{**r, "set": name, "wiki": wiki} for r in got]
            sets[name] = []
    OUT.mkdir(parents=True, exist_ok=True)
    tag = f"-{args.model.replace('/', '_')}" if args.model else ""
    tag += f"-judge-{Path(args.judge).name}-{args.shown or ''}" if args.judge else ""
    out = OUT / f"rows-{half}-{threshold}{tag}.json"
    out.write_text(json.dumps(rows, indent=1, ensure_ascii=False))
    if args.judge:
        report_judge(rows, [n for n in sets], half)
        return
    if args.tune:
        print("| threshold | set | " + " | ".join(outcomes(rows)) + " |")
        for t in [0.0, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8]:
            for name in sets:
                o = outcomes([r for r in rows if r["set"] == name], t)
                print(f"| {t} | {name} (dev) | " + " | ".join(map(str, o.values())) + " |")
        return
    print(f"threshold {threshold}, {half} sets")
    print("| set | " + " | ".join(outcomes(rows)) + " |")
    print("|---" * 8 + "|")
    for name in sets:
        o = outcomes([r for r in rows if r["set"] == name])
        print(f"| {name} ({half}) | " + " | ".join(map(str, o.values())) + " |")


def report_judge(rows: list[dict], names: list[str], half: str) -> None:
    """The outcomes without and with the judge, per set, and the judge's seconds."""
    print("| set | rule | " + " | ".join(outcomes(rows)) + " |")
    print("|---" * 9 + "|")
    for name in names:
        mine = [r for r in rows if r["set"] == name]
        for rule in ("lexical", "judge", "loose"):
            o = outcomes(mine, rule=rule)
            print(f"| {name} ({half}) | {rule} | " + " | ".join(map(str, o.values())) + " |")
    judged = [r["judged"] for r in rows if r.get("judged")]
    if judged:
        secs = sorted(j["seconds"] for j in judged)
        loads = sorted(j["load"] for j in judged)
        unusable = sum(j["answers"] is None for j in judged)
        at = [j["gold_at"] for r in rows if (j := r.get("judged")) and not r["uncovered"]]
        print(
            f"judged {len(judged)}: median {secs[len(secs) // 2]} s ({secs[0]}-{secs[-1]}), "
            f"load {loads[0]}-{loads[-1]}; no usable verdict {unusable}; gold answer among "
            f"the sentences shown of covered ones: "
            + ", ".join(f"top-{k} {sum(0 < a <= k for a in at)}/{len(at)}" for k in (2, 4, 6, 8))
        )


if __name__ == "__main__":
    main()
