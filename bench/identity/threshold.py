"""bench/identity/threshold: where near-identical text ends, measured on ../shared/data.

Two distributions of the Jaccard similarity compiler/identity.py computes (3-word
shingles): between *distinct* documents (every pair of the decision records, of the
HotpotQA passages, of the MuSiQue paragraphs, of 200 CMRC passages) and between a
document and a *revision* of it (each decision record and up to 200 passages of each
corpus, revised five ways: one number or word changed, a paragraph added, a paragraph
cut, 10% and 25% of its sentences replaced by other text).

Every document belongs to one of two halves, decided by its name alone (see
:func:`half_of`): the thresholds are derived on the *dev* half only (:func:`derive`,
the rule below), and the figures quoted are those of the *held-out* half, which the
rule never saw (bench/identity/run.py's 100 sources are held-out documents too).

The rule, on the dev half, over a 0.05 grid (a wiki of WIKI_SOURCES sources: a new
document is compared with each of them, so a share p of distinct pairs above a
threshold means about WIKI_SOURCES * p of its comparisons land there):

- SAME_TEXT: the lowest value at which a new document is wrongly taken as a revision
  of another (a distinct pair at or above it) in at most MERGE_BUDGET of cases, in
  every corpus: a wrong merge loses a document into another's article;
- MAYBE_TEXT: the lowest value at which a new document is needlessly named as a
  possible revision in at most NAMED_BUDGET of cases, in every corpus: below it a
  revision is compiled as a new source without a word, so lower is better, as long as
  the run's "may revise" lines stay worth reading.

    python -m bench.identity.threshold
"""

from __future__ import annotations

import json
import random
import re
import sys
import zlib
from bisect import bisect_left
from itertools import combinations
from pathlib import Path

from compiler.identity import MAYBE_TEXT, SAME_TEXT, jaccard, shingle_hashes

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
if not DATA.is_dir():
    DATA = Path("/work/shared/data")

HALVES = ("dev", "held-out")
WIKI_SOURCES = 1_000
MERGE_BUDGET = 0.01
NAMED_BUDGET = 0.10
GRID = [round(0.05 * i, 2) for i in range(2, 20)]
#: Corpora where one title may hold versions of one paragraph (not distinct documents).
VERSIONED = ("hotpotqa passages", "musique paragraphs")


def half_of(key: str) -> str:
    """The half a document belongs to, from its name (a file name, a title, an id): the
    CRC-32 of the name, even or odd. Versions of one paragraph under one title stay
    together, so a revision never sits in the other half from its document."""
    return HALVES[zlib.crc32(key.encode("utf-8")) % 2]


def documents() -> dict[str, list[tuple[str, str]]]:
    """(name, text) of every document of each corpus."""
    adr = [(p.name, p.read_text(encoding="utf-8"))
           for p in sorted((DATA / "adr_govuk").glob("*.md"))]  # fmt: skip
    hotpot = json.loads((DATA / "hotpotqa100" / "hotpotqa_train_corpus.json").read_text())
    musique = json.loads((DATA / "musique50" / "musique_corpus.json").read_text())
    cmrc = json.loads((DATA / "cmrc2018" / "cmrc2018_trial.json").read_text())
    cmrc_texts = [(p["id"], p["context"]) for d in cmrc["data"] for p in d["paragraphs"]][:200]
    return {
        "decision records": adr,
        "hotpotqa passages": [(t, f"{t}\n\n" + "".join(s)) for t, s in hotpot.items()],
        "musique paragraphs": [(p["title"], f"{p['title']}\n\n{p['text']}") for p in musique],
        "cmrc passages": cmrc_texts,
    }


def corpora(half: str | None = None) -> dict[str, list[str]]:
    """The texts of each corpus, of one half (None: both)."""
    return {
        name: [text for key, text in docs if half is None or half_of(key) == half]
        for name, docs in documents().items()
    }


def sentences(text: str, *, headings: bool = True) -> list[str]:
    """The sentences of ``text``; without ``headings`` its heading lines left out (a
    revision borrows another document's prose, not its title)."""
    if not headings:
        text = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))
    return [s for s in re.split(r"(?<=[.!?。！？])\s*", text) if s.strip()]


def revise(text: str, how: str, other: str, rng: random.Random) -> str:
    if how == "one number or word":
        nums = list(re.finditer(r"\d+", text))
        if nums:
            m = rng.choice(nums)
            return text[: m.start()] + str(int(m.group()) + 5) + text[m.end() :]
        ws = list(re.finditer(r"\w{4,}", text))
        m = rng.choice(ws)
        return text[: m.start()] + "changed" + text[m.end() :]
    paras = [p for p in text.split("\n\n") if p.strip()]
    if how == "a paragraph added":
        add = " ".join(sentences(other, headings=False)[:3])
        paras.insert(rng.randrange(len(paras) + 1), add)
        return "\n\n".join(paras)
    if how == "a paragraph cut":
        if len(paras) > 2:
            paras.pop(rng.randrange(1, len(paras)))
            return "\n\n".join(paras)
        ss = sentences(text)
        return "".join(ss[: max(1, len(ss) - max(1, len(ss) // 6))])
    share = 0.1 if how == "10% of sentences replaced" else 0.25
    ss = sentences(text)
    others = sentences(other, headings=False) or ["Something else entirely."]
    k = max(1, round(len(ss) * share))
    for i in rng.sample(range(len(ss)), min(k, len(ss))):
        ss[i] = rng.choice(others)
    return " ".join(ss)


WAYS = (
    "one number or word",
    "a paragraph added",
    "a paragraph cut",
    "10% of sentences replaced",
    "25% of sentences replaced",
)


class Measured:
    """The similarities of one half: every distinct pair's (sorted, per corpus), and each
    revision's (per corpus and way), with the pairs of one title in two versions."""

    def __init__(self, texts: dict[str, list[str]], rng: random.Random) -> None:
        self.sizes: dict[str, int] = {}
        self.distinct: dict[str, list[float]] = {}
        self.versions: dict[str, list[float]] = {}
        self.revised: dict[tuple[str, str], list[float]] = {}
        for name, docs in texts.items():
            hashes = [shingle_hashes(t) for t in docs]
            heads = [t.split("\n", 1)[0].strip() for t in docs]
            distinct, versions = [], []
            for a, b in combinations(range(len(docs)), 2):
                if docs[a].strip() == docs[b].strip():
                    continue  # the same passage twice in a corpus is not two documents
                s = jaccard(hashes[a], hashes[b])
                if heads[a] == heads[b] and name in VERSIONED:
                    versions.append(s)
                else:
                    distinct.append(s)
            self.sizes[name] = len(docs)
            self.distinct[name] = sorted(distinct)
            self.versions[name] = versions
            picked = docs if len(docs) <= 200 else rng.sample(docs, 200)
            for t in picked:
                other = rng.choice(docs)
                for way in WAYS:
                    score = jaccard(shingle_hashes(t), shingle_hashes(revise(t, way, other, rng)))
                    self.revised.setdefault((name, way), []).append(score)

    def at_or_above(self, name: str, threshold: float) -> int:
        pairs = self.distinct[name]
        return len(pairs) - bisect_left(pairs, threshold - 1e-12)

    def per_document(self, name: str, threshold: float) -> float:
        """How often a new document meets a distinct one at or above ``threshold`` in a
        wiki of WIKI_SOURCES sources (the share of pairs there, times the sources)."""
        pairs = self.distinct[name]
        return min(1.0, WIKI_SOURCES * self.at_or_above(name, threshold) / max(len(pairs), 1))


def derive(measured: Measured) -> tuple[float, float]:
    """SAME_TEXT and MAYBE_TEXT by the module's rule, from ``measured`` (the dev half)."""

    def lowest(budget: float) -> float:
        for t in GRID:
            if all(measured.per_document(n, t) <= budget for n in measured.distinct):
                return t
        return GRID[-1]

    same = lowest(MERGE_BUDGET)
    return same, min(lowest(NAMED_BUDGET), same)


def print_tables(measured: Measured, same: float, maybe: float) -> None:
    print("Distinct documents (different titles), and one paragraph under one title twice")
    print("(MuSiQue holds Wikipedia paragraphs in more than one version):\n")
    print("| corpus | documents | distinct pairs | max | >= MAYBE | >= SAME "
          "| same title, other text: pairs, >= SAME |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for name, pairs in measured.distinct.items():
        versions = measured.versions[name]
        print(f"| {name} | {measured.sizes[name]} | {len(pairs):,} "
              f"| {pairs[-1] if pairs else 0:.3f} | {measured.at_or_above(name, maybe)} "
              f"| {measured.at_or_above(name, same)} "
              f"| {len(versions)}, {sum(v >= same for v in versions)} |")  # fmt: skip
    print("\nRevisions made of each document:\n")
    print("| corpus | revision | documents | min | 5th percentile | median | >= SAME "
          "| in between | < MAYBE |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for (name, way), scores in measured.revised.items():
        s = sorted(scores)
        hi = sum(x >= same for x in s)
        low = sum(x < maybe for x in s)
        print(f"| {name} | {way} | {len(s)} | {s[0]:.3f} | {s[len(s) // 20]:.3f} "
              f"| {s[len(s) // 2]:.3f} | {hi} | {len(s) - hi - low} | {low} |")  # fmt: skip


def main() -> None:
    rng = random.Random(25)
    dev = Measured(corpora("dev"), rng)
    same, maybe = derive(dev)
    print("### Derived on the dev half\n")
    print(f"In a wiki of {WIKI_SOURCES:,} sources, per new document, the worst corpus:\n")
    print("| threshold | " + " | ".join(dev.distinct) + " |")
    print("|---|" + "---|" * len(dev.distinct))
    for t in GRID:
        if 0.2 <= t <= 0.9:
            cells = " | ".join(f"{dev.per_document(n, t):.2%}" for n in dev.distinct)
            print(f"| {t:.2f} | {cells} |")
    print(f"\nThe rule gives SAME_TEXT {same}, MAYBE_TEXT {maybe}; compiler/identity.py has "
          f"SAME_TEXT {SAME_TEXT}, MAYBE_TEXT {MAYBE_TEXT}"
          + (" (the same)." if (same, maybe) == (SAME_TEXT, MAYBE_TEXT) else " (NOT the same).")
          + "\n")  # fmt: skip
    print_tables(dev, SAME_TEXT, MAYBE_TEXT)
    print(f"\n### The held-out half, with SAME_TEXT {SAME_TEXT}, MAYBE_TEXT {MAYBE_TEXT}\n")
    print_tables(Measured(corpora("held-out"), rng), SAME_TEXT, MAYBE_TEXT)


if __name__ == "__main__":
    sys.exit(main())
