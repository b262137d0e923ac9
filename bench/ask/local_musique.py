"""Multi-hop questions end to end with the embedded model: MuSiQue, 20 questions.

The wiki: every paragraph the first N questions of ../shared/data/musique50 come with
(their gold paragraphs and MuSiQue's own distractors, about 20 a question), one article
each (title, first sentence as summary, the paragraph as body), no model compile. Each
question is asked through the product's path (`retrieval.ask`, follow-up hops included)
with the embedded model (`local/default`, or --model), in one process, one after the
other. Recorded per question: the pages read, how many of its gold pages (one a hop of
its decomposition) were read, whether the answer is right (the gold answer or one of its
aliases in the answer, as a whole word, case-insensitive), seconds, and the hops used.
Results are written after each question to bench/out/ask/local_musique-N.json, so a
long run can be read midway and resumed.

The machine is shared: the run refuses to start when the 1-minute load average is over
--max-load (3), and records the load before each question.

    python bench/ask/local_musique.py [--questions 20] [--model local/default]
    python bench/ask/local_musique.py --max-hops 2 --second-hop-pages 2  # follow-ups on
    python bench/ask/local_musique.py --report      # the Markdown table of a run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

DATA = ROOT.parent / "shared" / "data" / "musique50" / "musique_dev50.json"
OUT = ROOT / "bench" / "out" / "ask"


def first_sentence(text: str) -> str:
    end = text.find(". ")
    return (text if end < 0 else text[: end + 1])[:190]


def build(kb_dir: Path, questions: list[dict]) -> dict[tuple[str, str], str]:
    """The wiki of the questions' paragraphs; (title, text) -> article path."""
    from wiki import Article, KnowledgeBase, build_catalog, open_state, write_article
    from wiki.catalog import write_indexes
    from wiki.indexing import refresh_search_index

    kb = KnowledgeBase.init(kb_dir)
    paths: dict[tuple[str, str], str] = {}
    for q in questions:
        for para in q["paragraphs"]:
            key = (para["title"], para["paragraph_text"])
            if key in paths:
                continue
            path = paths[key] = f"wiki/entity/p{len(paths):04d}.md"
            write_article(
                kb,
                Article(path, key[0][:80], "entity", first_sentence(key[1]), [],
                        ["raw/musique.md"], "2026-01-01", "2026-01-01", key[1] + "\n"),
            )  # fmt: skip
    write_indexes(kb, build_catalog(kb))
    with closing(open_state(kb)) as conn:
        refresh_search_index(kb, conn)
    return paths


def gold_paths(q: dict, paths: dict[tuple[str, str], str]) -> list[str]:
    """The page of each hop of the question's decomposition, in order."""
    out = []
    for hop in q["question_decomposition"]:
        para = q["paragraphs"][hop["paragraph_support_idx"]]
        out.append(paths[(para["title"], para["paragraph_text"])])
    return out


def right(answer: str, gold: list[str]) -> bool:
    """Whether one of the gold answers is in ``answer`` as a whole word (case-insensitive)."""
    low = answer.casefold()
    return any(
        re.search(r"(?<!\w)" + re.escape(g.casefold()) + r"(?!\w)", low) for g in gold if g.strip()
    )


async def ask_all(
    kb_dir: Path, overrides: dict[str, Any], questions: list[dict], results: dict, out: Path
) -> None:
    from kb_ai.errors import KbAiError
    from kb_ai.llm import open_llm
    from kb_ai.settings import load_settings
    from retrieval import ask
    from wiki import KnowledgeBase

    kb = KnowledgeBase.open(kb_dir)
    settings = load_settings(kb_dir, overrides, detect=False)
    results["settings"] = {
        "max_hops": settings.max_hops,
        "second_hop_pages": settings.second_hop_pages,
        "select_k": settings.select_k,
        "selection_budget_tokens": settings.selection_budget_tokens,
        "read_chars": settings.read_chars,
    }
    paths = results["paths"]
    rows = results["rows"]
    for q in questions[len(rows) :]:
        gold = gold_paths(q, {tuple(k.split("\x00", 1)): v for k, v in paths.items()})
        answers = [q["answer"], *q.get("answer_aliases", [])]
        row: dict[str, Any] = {
            "question": q["question"],
            "gold_answers": answers,
            "gold_pages": gold,
            "load": round(os.getloadavg()[0], 2),
        }
        llm = open_llm(settings, db_path=kb.state_db)
        started = time.monotonic()
        try:
            answer = await ask(kb, settings, llm, q["question"])
            row |= {
                "answer": answer.answer[:600],
                "right": right(answer.answer, answers),
                "read": answer.read,
                "gold_read": sum(g in answer.read for g in gold),
                "cited": [c.path for c in answer.citations],
                "hops": len(answer.hops),
                "queries": [h.query for h in answer.hops],
            }
        except KbAiError as exc:
            row |= {"right": False, "read": [], "gold_read": 0, "hops": 0,
                    "error": f"{type(exc).__name__}: {str(exc)[:300]}"}  # fmt: skip
        finally:
            await llm.aclose()
        row["seconds"] = round(time.monotonic() - started, 1)
        rows.append(row)
        out.write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")
        print(
            f"{len(rows)}. right={row['right']} gold {row['gold_read']}/{len(gold)}"
            f" read {len(row['read'])} hops {row['hops']} {row['seconds']} s"
            f" load {row['load']}: {q['question']}",
            flush=True,
        )


def report(results: dict) -> str:
    rows = results["rows"]
    n = len(rows)
    gold = sum(len(r["gold_pages"]) for r in rows)
    lines = [
        f"Model `{results['model']}`, {n} questions, wiki of {len(results['paths'])} paragraphs,"
        f" settings {results.get('settings')}"
        f" (load average before the run: {results['load']}; per question"
        f" {min(r['load'] for r in rows):.2f}-{max(r['load'] for r in rows):.2f}).",
        "",
        "| measure | value |",
        "|---|---|",
        f"| answers right (gold answer or alias in the answer) | {sum(r['right'] for r in rows)}"
        f" of {n} |",
        f"| gold pages read | {sum(r['gold_read'] for r in rows)} of {gold} |",
        f"| questions with every gold page read | "
        f"{sum(r['gold_read'] == len(r['gold_pages']) for r in rows)} of {n} |",
        f"| pages read per question (mean) | {statistics.fmean(len(r['read']) for r in rows):.1f} |",
        f"| hops used per question (mean; 1 = no follow-up) |"
        f" {statistics.fmean(r['hops'] for r in rows):.2f} |",
        f"| seconds per question (median, max) | {statistics.median(r['seconds'] for r in rows):.0f},"
        f" {max(r['seconds'] for r in rows):.0f} |",
        f"| errors | {sum('error' in r for r in rows)} |",
        "",
    ]
    for i, r in enumerate(rows, 1):
        said = " ".join(r.get("answer", r.get("error", "")).split())[:160]
        lines.append(
            f"{i}. {'right' if r['right'] else 'wrong'}, gold {r['gold_read']}/"
            f"{len(r['gold_pages'])}, {r['hops']} hop(s), {r['seconds']:.0f} s:"
            f" {r['question']} (gold: {r['gold_answers'][0]}) — {said}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--model", default="local/default")
    parser.add_argument("--max-load", type=float, default=3.0)
    parser.add_argument("--max-hops", type=int, help="else the model's default (local: 0)")
    parser.add_argument("--second-hop-pages", type=int, help="else the model's default")
    parser.add_argument("--report", action="store_true", help="print the table of the last run")
    args = parser.parse_args()
    overrides: dict[str, Any] = {"model": args.model}
    for name in ("max_hops", "second_hop_pages"):
        if getattr(args, name) is not None:
            overrides[name] = getattr(args, name)
    tag = "".join(f"-{k}{v}" for k, v in overrides.items() if k != "model")
    out = OUT / f"local_musique-{args.questions}{tag}.json"
    if args.report:
        print(report(json.loads(out.read_text(encoding="utf-8"))))
        return
    load = os.getloadavg()
    if load[0] > args.max_load:
        raise SystemExit(f"load average {load[0]:.2f} is over {args.max_load}: not started")
    questions = json.loads(DATA.read_text(encoding="utf-8"))[: args.questions]
    kb_dir = OUT / f"local-musique-{args.questions}{tag}"
    if out.is_file() and (kb_dir / "wiki").is_dir():
        results = json.loads(out.read_text(encoding="utf-8"))  # go on where it stopped
    else:
        OUT.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(kb_dir, ignore_errors=True)  # a wiki left without its results
        paths = build(kb_dir, questions)
        results = {
            "model": args.model,
            "load": " ".join(f"{x:.2f}" for x in load),
            "paths": {f"{t}\x00{x}": p for (t, x), p in paths.items()},
            "rows": [],
        }
    asyncio.run(ask_all(kb_dir, overrides, questions, results, out))
    print(report(results))


if __name__ == "__main__":
    main()
