"""Does ask decline what the wiki does not cover, and still answer what it does?

Two sets, built from ../shared/data: HotpotQA-100 and MuSiQue-50. For each, one wiki of
every paragraph its questions come with (gold and distractors, one article each, no
model compile), less the gold paragraphs of every other question: those questions are
*uncovered* (their distractors, which share many of their words, are in the wiki; what
answers them is not), the rest are *covered* (every gold paragraph kept). A covered
question whose gold paragraph is also another's removed gold is dropped.

Each set is split in halves by question order: the first half is the development half
(the threshold of retrieval/coverage.py is tuned on it, --tune), the second the
held-out half (reported). Each question is asked through the product's path
(retrieval.ask, the extractive small-model path) with a stand-in model: selection picks
the first pages offered (the lexical search order), the sentence pick takes the first
two sentences offered (as the 0.5B model mostly does), follow-ups say "enough". The
coverage decision needs no model judgement, so the stand-in only decides which
sentences are quoted.

Outcomes: covered question answered with its gold answer in the answer (right answer),
covered question declined (lost), covered question answered without it (wrong answer);
uncovered question declined (right abstention), answered (wrong answer).

    python bench/ask/coverage.py --tune          # scores on the dev halves, best threshold
    python bench/ask/coverage.py --threshold 0   # today's behaviour, held-out halves
    python bench/ask/coverage.py                 # the shipped threshold, held-out halves
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import re
import shutil
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

DATA = ROOT.parent / "shared" / "data"
OUT = ROOT / "bench" / "out" / "ask" / "coverage"


def _lit(v: Any) -> Any:
    return ast.literal_eval(v) if isinstance(v, str) else v


def hotpot() -> list[dict]:
    """Questions as {question, answers, paragraphs: [(title, text)], gold: {titles}}."""
    out = []
    for q in json.loads((DATA / "hotpotqa100" / "hotpotqa_train.json").read_text()):
        context = _lit(q["context"])
        gold = {t for t, _ in _lit(q["supporting_facts"])}
        paras = [(t, "".join(s).strip()) for t, s in context]
        out.append(
            {"question": q["question"], "answers": [q["answer"]], "paragraphs": paras,
             "gold": {p for p in paras if p[0] in gold}}
        )  # fmt: skip
    return out


def musique() -> list[dict]:
    out = []
    for q in json.loads((DATA / "musique50" / "musique_dev50.json").read_text()):
        paras = [(p["title"], p["paragraph_text"]) for p in _lit(q["paragraphs"])]
        gold = {
            (p["title"], p["paragraph_text"]) for p in _lit(q["paragraphs"]) if p["is_supporting"]
        }
        answers = [q["answer"], *_lit(q.get("answer_aliases") or [])]
        out.append(
            {"question": q["question"], "answers": answers, "paragraphs": paras, "gold": gold}
        )
    return out


def split(questions: list[dict]) -> list[dict]:
    """Every other question uncovered; halves by order; covered ones that lost a gold
    paragraph to another question's removal dropped."""
    for i, q in enumerate(questions):
        q["uncovered"] = i % 2 == 1
        q["half"] = "dev" if i < len(questions) // 2 else "held-out"
    removed = set().union(*(q["gold"] for q in questions if q["uncovered"]))
    return [q for q in questions if q["uncovered"] or not (q["gold"] & removed)]


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


def right(answer: str, gold: list[str]) -> bool:
    low = answer.casefold()
    return any(
        re.search(r"(?<!\w)" + re.escape(g.casefold()) + r"(?!\w)", low) for g in gold if g.strip()
    )


async def run_set(name: str, questions: list[dict], threshold: float, half: str) -> list[dict]:
    from kb_ai.settings import load_settings
    from retrieval import ask
    from retrieval.coverage import measure
    from retrieval.pages import read_page
    from tests.fakes.fake_llm import FakeLLM
    from wiki import KnowledgeBase

    kb_dir = OUT / name
    build(kb_dir, questions)
    kb = KnowledgeBase.open(kb_dir)
    settings = load_settings(
        kb_dir, {"model": "fake/model", "small_model": True, "coverage_threshold": threshold},
        detect=False,
    )  # fmt: skip
    rows = []
    for q in questions:
        if half != "all" and q["half"] != half:
            continue
        answer = await ask(kb, settings, FakeLLM(stand_in), q["question"])
        pages = [read_page(kb, p, settings.read_chars) for p in answer.read]
        query = answer.hops[0].query if answer.hops else q["question"]
        rows.append(
            {"set": name, "half": q["half"], "uncovered": q["uncovered"],
             "question": q["question"], "covered": answer.covered,
             "right": answer.covered and right(answer.answer, q["answers"]),
             "score": round(measure(query, pages).score, 3) if pages else 0.0,
             "answer": answer.answer[:300], "read": answer.read, "query": query,
             "answers": q["answers"]}
        )  # fmt: skip
    return rows


def outcomes(rows: list[dict], threshold: float | None = None) -> dict[str, int]:
    """Counts; with ``threshold``, as if the gate were at it (rows run with the gate off)."""

    def covered(r: dict) -> bool:
        return r["covered"] and (threshold is None or r["score"] >= threshold)

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
    ap.add_argument("--tune", action="store_true", help="dev halves, gate off, sweep thresholds")
    ap.add_argument("--threshold", type=float, default=THRESHOLD)
    args = ap.parse_args()
    sets = {"hotpotqa": split(hotpot()), "musique": split(musique())}
    half = "dev" if args.tune else "held-out"
    threshold = 0.0 if args.tune else args.threshold
    rows = []
    for name, questions in sets.items():
        rows += asyncio.run(run_set(name, questions, threshold, half))
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"rows-{half}-{threshold}.json").write_text(json.dumps(rows, indent=1))
    if args.tune:
        print("| threshold | set | " + " | ".join(outcomes(rows)) + " |")
        for t in [0.0, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8]:
            for name in sets:
                o = outcomes([r for r in rows if r["set"] == name], t)
                print(f"| {t} | {name} (dev) | " + " | ".join(map(str, o.values())) + " |")
        return
    print(f"threshold {threshold}, {half} halves")
    print("| set | " + " | ".join(outcomes(rows)) + " |")
    print("|---" * 8 + "|")
    for name in sets:
        o = outcomes([r for r in rows if r["set"] == name])
        print(f"| {name} ({half}) | " + " | ".join(map(str, o.values())) + " |")


if __name__ == "__main__":
    main()
