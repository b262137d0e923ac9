"""The writer's material fitted to its budget: a source whose merged extraction is more
than a prompt may hold still produces its article (the items most related to it first),
instead of a write call refused for its size."""

import random

from click.testing import CliRunner

from compiler.material import Material, fit_material
from kb_ai.cli import main

NAMES = [
    "Ada",
    "Boris",
    "Chen",
    "Dana",
    "Emil",
    "Farah",
    "Goran",
    "Hana",
    "Ivo",
    "Jun",
    "Kira",
    "Lars",
    "Mei",
    "Nils",
    "Omar",
    "Pia",
]
WORDS = [
    "cache",
    "queue",
    "broker",
    "region",
    "cluster",
    "shard",
    "replica",
    "ledger",
    "invoice",
    "tenant",
    "gateway",
    "scheduler",
    "pipeline",
    "snapshot",
    "index",
    "catalog",
    "runner",
    "worker",
    "deploy",
    "rollout",
    "budget",
    "audit",
]


def operations_log(size: int) -> str:
    """About ``size`` bytes of distinct sentences (names, numbers, dates) under headings."""
    rng = random.Random(7)
    parts, n = ["# Operations log of the platform team\n"], 0
    while sum(len(p) for p in parts) < size:
        n += 1
        if n % 40 == 1:
            parts.append(f"\n## Week {n // 40 + 1}\n\n")
        w = rng.sample(WORDS, 3)
        parts.append(
            f"{rng.choice(NAMES)} decided that the {w[0]} {n} moves to the {w[1]} in region "
            f"r{rng.randint(1, 999)} because the {w[2]} grew to {rng.randint(10, 99_999):,} "
            f"entries by 2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}."
            + ("\n\n" if n % 5 == 0 else " ")
        )
    return "".join(parts)


def test_a_source_whose_material_passes_max_prompt_chars_still_gets_its_article(
    kb, fake_model, monkeypatch, tmp_path
):
    """The issue: the merged extraction of a large source made a write prompt over
    max_prompt_chars, so the write call was refused and the source produced nothing.
    Scaled down: 1 MB of log against a 100,000-character prompt limit."""
    monkeypatch.setenv("KB_AI_MAX_PROMPT_CHARS", "100000")
    source = tmp_path / "ops-log.md"
    source.write_text(operations_log(1_000_000), encoding="utf-8")
    result = CliRunner().invoke(main, ["--kb", str(kb.root), "compile", str(source)])
    assert result.exit_code == 0, result.output
    writes = [r for r in fake_model.requests if "<material>" in str(r["messages"])]
    assert writes, "no write call was made"
    for request in writes:
        assert sum(len(m["content"]) for m in request["messages"]) <= 100_000
    articles = list((kb.root / "wiki").rglob("*.md"))
    assert articles and "decided that the" in articles[0].read_text(encoding="utf-8")
    log = (kb.root / "log.md").read_text(encoding="utf-8")
    assert "material cut to" in log and "left out" in log


def material(text: str, source: str = "raw/ops.md") -> Material:
    return Material(source=source, text=text)


def test_the_items_most_related_to_the_article_are_kept_in_their_order():
    text = "\n".join([
        "Summary: What the platform team did in March.",
        "Facts:",
        "- The invoice run moved to Tuesdays.",
        "- Backups of the ledger run nightly at 02:00.",
        "- The gateway got a new certificate.",
        "- Backup copies are kept for thirty days.",
        "Complete list, regions (keep every item, in order):",
        "  1. eu-west-1",
        "  2. us-east-2",
    ])  # fmt: skip
    fitted, note = fit_material([material(text)], 170, "Backups")
    kept = fitted[0].text.splitlines()
    assert kept == [
        "Summary: What the platform team did in March.",
        "Facts:",
        "- Backups of the ledger run nightly at 02:00.",
        "- Backup copies are kept for thirty days.",
    ]
    assert note and "left out" in note
    # within the budget nothing changes
    assert fit_material([material(text)], 10_000, "Backups") == ([material(text)], None)


def test_a_complete_list_is_kept_whole_or_not_at_all():
    items = [f"  {i}. region-{i}" for i in range(1, 30)]
    text = "\n".join(["Summary: Regions.", "Complete list, regions (keep every item, in order):",
                      *items, "Facts:", "- One fact about regions."])  # fmt: skip
    for budget in (60, 200, 400, 2_000):
        kept = fit_material([material(text)], budget, "regions")[0][0].text
        listed = [line for line in kept.splitlines() if line in items]
        assert listed in ([], items)
        assert len(kept) <= budget
