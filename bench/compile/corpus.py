"""What the compile benchmark compiles: the decision records in --adr-dir (read in place,
never copied), and generated notes."""

from __future__ import annotations

import random
from pathlib import Path

ADR_DIR = Path("/work/shared/data/adr_govuk")


def adr_files(adr_dir: Path) -> list[Path]:
    files = sorted(p for p in adr_dir.glob("*.md") if p.name.upper() != "README.MD")
    if not files:
        raise SystemExit(f"no decision records (*.md) in {adr_dir}")
    return files


WORDS = (  # noqa: SIM905 (a sentence reads better than 32 quoted words)
    "deploy queue cache index schema backup replica latency budget owner review release "
    "rollback incident alert dashboard tenant quota token session migration partition "
    "endpoint gateway proxy certificate secret rotation cluster region failover archive"
).split()


def synthetic_notes(directory: Path, count: int, seed: int = 7) -> list[Path]:
    """Small distinct notes (a heading, a decision, a few facts, a list), one per file."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        a, b, c = rng.sample(WORDS, 3)
        lines = [
            f"# Note {i:04d}: {a} and {b}",
            "",
            f"We decided to move the {a} of service {i} behind the {b}, because the {c} "
            f"was slow during week {rng.randint(1, 52)}.",
            f"The {b} now handles about {rng.randint(10, 990)} requests per second.",
            f"Owner of the {a} work is team {rng.choice('ABCDEFGH')}{rng.randint(1, 9)}.",
            "",
            "Steps agreed:",
            "",
            *(f"- {w} the {rng.choice(WORDS)}" for w in rng.sample(WORDS, 3)),
            "",
        ]
        path = directory / f"note-{i:04d}.md"
        path.write_text("\n".join(lines), encoding="utf-8")
        paths.append(path)
    return paths
