"""kb-ai's own time per hop of a question at 10,000 articles (issue 17: under 50 ms p95).

The ask benchmark's synthetic wiki (bench/ask/corpus.py) and its 22 questions, each
through the real `retrieval.ask()` in a fresh process (bench/ask/own_time.py), with a
stand-in model that answers at once and is never satisfied after a reading, so every
question runs all its hops (the first search and read, then up to `max_hops` follow-ups,
each a shortlist search with the names its best hit mentions and a selection prompt).
Own time = wall time minus the time inside the stand-in; per hop = that over the hops
the question ran.

    python bench/ask/hops_time.py [--size 10000] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.ask.corpus import build_wiki  # noqa: E402
from bench.ask.own_time import own_time  # noqa: E402
from bench.ask.report import pct  # noqa: E402


def render(result: dict, load: str) -> str:
    rows = result["rows"][1:]  # the first question pays the process's one-time costs
    per_hop = [r["own_per_hop_ms"] for r in rows if r["hops"]]  # not "not covered" ones
    whole = [r["own_ms"] for r in rows]
    hops = Counter(r["hops"] for r in rows)
    spread = ", ".join(f"{n} hop(s): {c}" for n, c in sorted(hops.items()))
    return "\n".join(
        [
            "## Own time per hop",
            "",
            f"`python bench/ask/hops_time.py`: {result['size']:,} articles, the ask"
            f" benchmark's questions after the first ({len(rows)}; {spread}), a stand-in"
            " model that answers at once and asks for one more search after every reading.",
            "",
            "| measure | p50 (ms) | p95 (ms) | max (ms) |",
            "|---|---|---|---|",
            f"| own time per hop | {statistics.median(per_hop):.1f} | {pct(per_hop, 95):.1f}"
            f" | {max(per_hop):.1f} |",
            f"| own time per question | {statistics.median(whole):.1f} | {pct(whole, 95):.1f}"
            f" | {max(whole):.1f} |",
            "",
            f"First question of the process: {result['rows'][0]['own_ms']:.1f} ms. Load"
            f" average while measured: {load}.",
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=None, help="also write the fragment here")
    args = parser.parse_args()
    result = own_time(args.size, build_wiki(args.size))
    fragment = render(result, " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(fragment)
    if args.out:
        args.out.write_text(fragment, encoding="utf-8")


if __name__ == "__main__":
    main()
