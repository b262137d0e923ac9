"""Does the shortlist reach every page a multi-hop question needs? (MuSiQue, 50 questions)

Each of the 1,890 paragraphs in ../shared/data/musique50 becomes one article (title =
paragraph title, summary = first sentence, body = the paragraph). For each question the
gold pages are the paragraphs its decomposition names, one per hop; a later hop's page is
usually named only inside an earlier page, never in the question.

Measured, at k = 20 and 50:
- single pass: the question alone, searched once (`SearchIndex.search`), and as the
  shortlist of `kb-ai ask` searches it, with feedback from its best hit's names
  (`wiki.feedback.search_with_feedback`); the share of gold pages in the top k, that
  share for first-hop and later-hop pages, and the share of questions with all their
  gold pages in the top k (all-gold);
- with the bridge terms a perfect reader would learn: hop n searches the question plus
  the gold answers of hops 1..n-1 (from the decomposition), and a question counts when
  every hop's gold page is in the top k of some hop's search (all-gold);
- the same on HotpotQA-100 single pass, both ways, as a guard.

    python bench/ask/recall_musique.py [--out docs/benchmarks-multihop.md]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from wiki.feedback import search_with_feedback  # noqa: E402
from wiki.search import SearchDoc, SearchIndex  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
CUTOFFS = (20, 50)


def first_sentence(text: str) -> str:
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


def musique_index(db: Path) -> tuple[SearchIndex, dict[tuple[str, str], str]]:
    corpus = json.loads((DATA / "musique50" / "musique_corpus.json").read_text(encoding="utf-8"))
    paths: dict[tuple[str, str], str] = {}
    docs = []
    for i, entry in enumerate(corpus):
        path = f"p{i}"
        paths.setdefault((entry["title"], entry["text"]), path)
        docs.append(
            SearchDoc(path, entry["title"], first_sentence(entry["text"]), body=entry["text"])
        )
    index = SearchIndex.open(db)
    index.upsert(docs)
    return index, paths


def plain(index: SearchIndex, query: str, limit: int) -> list[str]:
    return [h.path for h in index.search(query, limit=limit)]


SEARCHES = {"search": plain, "feedback": search_with_feedback}


def measure_musique(db: Path, how: str) -> dict:
    questions = json.loads((DATA / "musique50" / "musique_dev50.json").read_text(encoding="utf-8"))
    index, paths = musique_index(db)
    search = SEARCHES[how]
    single = {k: [] for k in CUTOFFS}
    first = {k: [] for k in CUTOFFS}
    later = {k: [] for k in CUTOFFS}
    all_single = {k: [] for k in CUTOFFS}
    all_bridge = {k: [] for k in CUTOFFS}
    latencies = []
    try:
        for q in questions:
            paragraphs = q["paragraphs"]
            hops = q["question_decomposition"]
            gold = []
            for hop in hops:
                para = paragraphs[hop["paragraph_support_idx"]]
                gold.append(paths[(para["title"], para["paragraph_text"])])
            started = time.perf_counter()
            hits = search(index, q["question"], max(CUTOFFS))
            latencies.append(time.perf_counter() - started)
            bridge_hits = [hits]
            learned: list[str] = []
            for hop in hops[:-1]:
                learned.append(hop["answer"])
                query = q["question"] + " " + " ".join(learned)
                bridge_hits.append(search(index, query, max(CUTOFFS)))
            for k in CUTOFFS:
                top = set(hits[:k])
                found = [g in top for g in gold]
                single[k].append(sum(found) / len(found))
                first[k].append(found[0])
                later[k] += found[1:]
                all_single[k].append(all(found))
                union = set().union(*(set(h[:k]) for h in bridge_hits))
                all_bridge[k].append(all(g in union for g in gold))
    finally:
        index.close()
    return {
        "questions": len(questions),
        "recall": {k: statistics.fmean(v) for k, v in single.items()},
        "first": {k: statistics.fmean(v) for k, v in first.items()},
        "later": {k: statistics.fmean(v) for k, v in later.items()},
        "all_single": {k: statistics.fmean(v) for k, v in all_single.items()},
        "all_bridge": {k: statistics.fmean(v) for k, v in all_bridge.items()},
        "p50_ms": statistics.median(latencies) * 1000,
        "p95_ms": sorted(latencies)[int(len(latencies) * 0.95)] * 1000,
    }


def measure_hotpot(db: Path, how: str) -> dict:
    questions = json.loads(
        (DATA / "hotpotqa100" / "hotpotqa_train.json").read_text(encoding="utf-8")
    )
    corpus = json.loads(
        (DATA / "hotpotqa100" / "hotpotqa_train_corpus.json").read_text(encoding="utf-8")
    )
    index = SearchIndex.open(db)
    try:
        index.upsert(
            SearchDoc(t, t, s[0].strip() if s else "", body="".join(s)) for t, s in corpus.items()
        )
        recall = {k: [] for k in CUTOFFS}
        for q in questions:
            gold = {title for title, _ in q["supporting_facts"]}
            hits = SEARCHES[how](index, q["question"], max(CUTOFFS))
            for k in CUTOFFS:
                recall[k].append(len(gold & set(hits[:k])) / len(gold))
    finally:
        index.close()
    return {k: statistics.fmean(v) for k, v in recall.items()}


def render(musique: dict[str, dict], hotpot: dict[str, dict], load: str) -> str:
    ways = list(musique)

    def row(name: str, key: str | None, source: dict[str, dict] = musique) -> str:
        cells = [f"{(source[w][key] if key else source[w])[k]:.3f}" for w in ways for k in CUTOFFS]
        return f"| {name} | " + " | ".join(cells) + " |"

    heads = [f"{w} @{k}" for w in ways for k in CUTOFFS]
    times = "; ".join(
        f"{w} {musique[w]['p50_ms']:.1f} ms median, {musique[w]['p95_ms']:.1f} ms p95" for w in ways
    )
    return "\n".join(
        [
            "## Shortlist recall on multi-hop questions",
            "",
            "`python bench/ask/recall_musique.py`: MuSiQue, "
            f"{musique[ways[0]]['questions']} questions of 2-4 hops, the 1,890-paragraph corpus"
            " as one article per paragraph; HotpotQA-100 (994 passages) as a guard. No model."
            " `search`: the question searched once; `feedback`: the shortlist as `kb-ai ask`"
            " builds it, with a second search adding the names its best hit mentions"
            " (wiki/feedback.py).",
            "",
            "| measure | " + " | ".join(heads) + " |",
            "|---|" + "---|" * len(heads),
            row("MuSiQue recall, single pass (share of gold pages)", "recall"),
            row("MuSiQue first-hop pages, single pass", "first"),
            row("MuSiQue later-hop pages, single pass", "later"),
            row("MuSiQue all-gold, single pass", "all_single"),
            row("MuSiQue all-gold, with a perfect reader's bridge terms", "all_bridge"),
            row("HotpotQA-100 recall, single pass", None, hotpot),
            "",
            f"Time per question on MuSiQue (all of its searches): {times}. Load average"
            f" while measured: {load}.",
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="also write the fragment here")
    args = parser.parse_args()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    musique, hotpot = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for how in SEARCHES:
            musique[how] = measure_musique(Path(tmp) / f"musique-{how}.db", how)
            hotpot[how] = measure_hotpot(Path(tmp) / f"hotpot-{how}.db", how)
    fragment = render(musique, hotpot, load)
    print(fragment)
    if args.out:
        args.out.write_text(fragment, encoding="utf-8")


if __name__ == "__main__":
    main()
