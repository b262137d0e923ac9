"""How well and how fast the lexical shortlist (wiki.search) finds what a question needs.

Recall: each of the 994 HotpotQA passages in ../shared/data/hotpotqa100 becomes one
article (title = passage title, summary = first sentence, body = the passage); for each
of the 100 multi-hop questions, the share of its gold passages among the top 20 and
top 50 hits, averaged over questions.

Speed: synthetic wikis of 100 to 100,000 articles made of generated words (Zipf
frequencies, vocabulary growing with the wiki), timed for indexing and for search() with
questions drawn from the articles' own words.

    python bench/ask/recall_hotpotqa.py [--sizes 100,1000,10000,100000] [--out PATH]

Prints a Markdown fragment and writes it to docs/benchmarks-recall.md.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from wiki.search import SearchDoc, SearchIndex  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "hotpotqa100"
CUTOFFS = (5, 10, 20, 50)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="hotpotqa100 folder")
    parser.add_argument("--sizes", default="100,1000,10000,100000", help="synthetic wiki sizes")
    parser.add_argument("--queries", type=int, default=200, help="timed queries per size")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks-recall.md")
    args = parser.parse_args()

    sizes = [int(size) for size in args.sizes.split(",") if size]
    with tempfile.TemporaryDirectory() as tmp:
        recall = measure_recall(args.data, Path(tmp) / "hotpot.db")
        speed = [
            measure_speed(size, args.queries, Path(tmp) / f"synthetic-{size}.db") for size in sizes
        ]
    fragment = render(recall, speed)
    print(fragment)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(fragment, encoding="utf-8")
    print(f"written to {args.out}", file=sys.stderr)


def measure_recall(data: Path, db: Path) -> dict:
    questions = json.loads((data / "hotpotqa_train.json").read_text(encoding="utf-8"))
    corpus = json.loads((data / "hotpotqa_train_corpus.json").read_text(encoding="utf-8"))
    docs = [
        SearchDoc(
            path=title,
            title=title,
            summary=sentences[0].strip() if sentences else "",
            keys=[],
            tags=[],
            body="".join(sentences),
        )
        for title, sentences in corpus.items()
    ]
    index = SearchIndex.open(db)
    try:
        index.upsert(docs)
        per_type: dict[str, list[dict[int, float]]] = {}
        latencies = []
        for question in questions:
            gold = {title for title, _ in question["supporting_facts"]}
            started = time.perf_counter()
            hits = [hit.path for hit in index.search(question["question"], limit=max(CUTOFFS))]
            latencies.append(time.perf_counter() - started)
            found = {k: len(gold & set(hits[:k])) / len(gold) for k in CUTOFFS}
            per_type.setdefault(question["type"], []).append(found)
    finally:
        index.close()
    rows = {"all": [found for group in per_type.values() for found in group], **per_type}
    return {
        "passages": len(docs),
        "rows": {
            name: (len(group), {k: statistics.fmean(f[k] for f in group) for k in CUTOFFS})
            for name, group in rows.items()
        },
        "p50_ms": statistics.median(latencies) * 1000,
    }


def measure_speed(size: int, n_queries: int, db: Path) -> dict:
    rng = random.Random(size)
    vocabulary = make_vocabulary(rng, max(2000, int(40 * size**0.6)))
    cumulative = list(itertools.accumulate(1 / rank for rank in range(1, len(vocabulary) + 1)))

    def words(n: int) -> str:
        return " ".join(rng.choices(vocabulary, cum_weights=cumulative, k=n))

    docs = [
        SearchDoc(
            path=f"wiki/topic/doc-{i}.md",
            title=words(rng.randint(3, 6)),
            summary=words(20),
            keys=words(3).split(),
            tags=words(2).split(),
            body=words(rng.randint(80, 250)),
        )
        for i in range(size)
    ]
    index = SearchIndex.open(db)
    try:
        started = time.perf_counter()
        index.upsert(docs)
        indexed_s = time.perf_counter() - started
        started = time.perf_counter()
        unchanged = index.upsert(docs)
        noop_s = time.perf_counter() - started
        assert unchanged == 0

        latencies = []
        for _ in range(n_queries):
            source = rng.choice(docs)
            picked = rng.sample(source.title.split(), 2) + rng.sample(source.body.split(), 3)
            question = f"what is the {picked[0]} {picked[1]} of {' '.join(picked[2:])}?"
            started = time.perf_counter()
            index.search(question, limit=50)
            latencies.append((time.perf_counter() - started) * 1000)
    finally:
        index.close()
    latencies.sort()
    return {
        "size": size,
        "vocabulary": len(vocabulary),
        "indexed_s": indexed_s,
        "noop_s": noop_s,
        "db_mb": db.stat().st_size / 1e6,
        "p50_ms": latencies[len(latencies) // 2],
        "p95_ms": latencies[int(len(latencies) * 0.95)],
        "max_ms": latencies[-1],
    }


def make_vocabulary(rng: random.Random, size: int) -> list[str]:
    consonants, vowels = "bcdfghjklmnprstvwz", "aeiou"
    words: set[str] = set()
    while len(words) < size:
        syllables = rng.randint(2, 4)
        words.add("".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(syllables)))
    return sorted(words, key=lambda _: rng.random())


def render(recall: dict, speed: list[dict]) -> str:
    lines = [
        "## Shortlist recall (HotpotQA, 100 multi-hop questions)",
        "",
        f"`python bench/ask/recall_hotpotqa.py`: {recall['passages']} passages indexed as"
        " articles (title, first sentence as summary, passage as body); share of each"
        " question's gold passages among the top k hits of `wiki.search`, averaged.",
        "",
        "| questions | n | " + " | ".join(f"recall@{k}" for k in CUTOFFS) + " |",
        "|---|---|" + "---|" * len(CUTOFFS),
    ]
    for name, (n, found) in recall["rows"].items():
        cells = " | ".join(f"{found[k]:.3f}" for k in CUTOFFS)
        lines.append(f"| {name} | {n} | {cells} |")
    lines += [
        "",
        f"Median search time on this corpus: {recall['p50_ms']:.1f} ms.",
        "",
        "## Search speed (synthetic wikis)",
        "",
        "Generated words with Zipf frequencies, vocabulary growing with the wiki; articles"
        " of 80-250 body words plus title, summary, keys and tags; questions of five words"
        " drawn from one article, with stop words around them; `limit=50`.",
        "",
        "| articles | vocabulary | index (s) | unchanged re-upsert (s) | db (MB) |"
        " search p50 (ms) | p95 (ms) | max (ms) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in speed:
        lines.append(
            f"| {row['size']:,} | {row['vocabulary']:,} | {row['indexed_s']:.2f} |"
            f" {row['noop_s']:.2f} | {row['db_mb']:.0f} | {row['p50_ms']:.1f} |"
            f" {row['p95_ms']:.1f} | {row['max_ms']:.1f} |"
        )
    lines += [
        "",
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version},"
        f" {platform.machine()}, {os.cpu_count()} CPUs.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
