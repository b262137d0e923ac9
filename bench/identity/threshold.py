"""bench/identity/threshold: where near-identical text ends, measured on ../shared/data.

Two distributions of the Jaccard similarity compiler/identity.py computes (3-word
shingles): between *distinct* documents (every pair of the 38 decision records, of the
994 HotpotQA passages, of the 1,890 MuSiQue paragraphs, of 200 CMRC passages) and between
a document and a *revision* of it (each decision record and 200 passages of each corpus,
revised five ways: one number or word changed, a paragraph added, a paragraph cut, 10%
and 25% of its sentences replaced by other text). SAME_TEXT must sit above every
distinct pair and below the revisions; MAYBE_TEXT below SAME_TEXT, where what is alike
is reported, not merged.

    python -m bench.identity.threshold
"""

from __future__ import annotations

import json
import random
import re
from itertools import combinations
from pathlib import Path

from compiler.identity import MAYBE_TEXT, SAME_TEXT, jaccard, shingle_hashes

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
if not DATA.is_dir():
    DATA = Path("/work/shared/data")


def corpora() -> dict[str, list[str]]:
    adr = [p.read_text(encoding="utf-8") for p in sorted((DATA / "adr_govuk").glob("*.md"))]
    hotpot = json.loads((DATA / "hotpotqa100" / "hotpotqa_train_corpus.json").read_text())
    musique = json.loads((DATA / "musique50" / "musique_corpus.json").read_text())
    cmrc = json.loads((DATA / "cmrc2018" / "cmrc2018_trial.json").read_text())
    cmrc_texts = [p["context"] for d in cmrc["data"] for p in d["paragraphs"]][:200]
    return {
        "decision records": adr,
        "hotpotqa passages": [f"{t}\n\n" + "".join(s) for t, s in hotpot.items()],
        "musique paragraphs": [f"{p['title']}\n\n{p['text']}" for p in musique],
        "cmrc passages": cmrc_texts,
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


def main() -> None:
    rng = random.Random(25)
    print(f"thresholds: SAME_TEXT {SAME_TEXT}, MAYBE_TEXT {MAYBE_TEXT}")
    print("Distinct documents (different titles), and one paragraph under one title twice")
    print("(MuSiQue holds Wikipedia paragraphs in more than one version):\n")
    print(
        "| corpus | documents | distinct pairs | max | >= MAYBE | >= SAME | same title, other text: pairs, >= SAME |"
    )
    print("|---|---|---|---|---|---|---|")
    revised: dict[tuple[str, str], list[float]] = {}
    for name, texts in corpora().items():
        hashes = [shingle_hashes(t) for t in texts]
        heads = [t.split("\n", 1)[0].strip() for t in texts]
        pairs = top = over = same = versions = versions_same = 0
        for a, b in combinations(range(len(texts)), 2):
            if texts[a].strip() == texts[b].strip():
                continue  # the same passage twice in a corpus is not two documents
            s = jaccard(hashes[a], hashes[b])
            if heads[a] == heads[b] and name != "cmrc passages":
                versions += 1
                versions_same += s >= SAME_TEXT
                continue
            pairs += 1
            top = max(top, s)
            over += s >= MAYBE_TEXT
            same += s >= SAME_TEXT
        print(f"| {name} | {len(texts)} | {pairs:,} | {top:.3f} | {over} | {same} "
              f"| {versions}, {versions_same} |")  # fmt: skip
        picked = texts if len(texts) <= 200 else rng.sample(texts, 200)
        for t in picked:
            other = rng.choice(texts)
            for way in WAYS:
                score = jaccard(shingle_hashes(t), shingle_hashes(revise(t, way, other, rng)))
                revised.setdefault((name, way), []).append(score)
    print("\nRevisions made of each document:\n")
    print(
        "| corpus | revision | documents | min | 5th percentile | median | >= SAME | in between | < MAYBE |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for (name, way), scores in revised.items():
        s = sorted(scores)
        same = sum(x >= SAME_TEXT for x in s)
        low = sum(x < MAYBE_TEXT for x in s)
        print(
            f"| {name} | {way} | {len(s)} | {s[0]:.3f} | {s[len(s) // 20]:.3f} "
            f"| {s[len(s) // 2]:.3f} | {same} | {len(s) - same - low} | {low} |"
        )


if __name__ == "__main__":
    main()
