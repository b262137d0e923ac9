"""`kb-ai lint --deep`: the model's findings are held to the articles, within a budget."""

from __future__ import annotations

import asyncio

from compiler.lint_deep import deep_lint
from tests.fakes.fake_llm import FakeLLM
from wiki import Article, ExtractionRecord, write_article, write_extraction

CACHE = "wiki/decision/cache.md"
OPS = "wiki/topic/operations.md"


def article(path, title, body, sources, tags=()):
    kind = path.split("/")[1]
    return Article(path, title, kind, title, list(tags), list(sources), "", "", body)


def build(kb):
    write_extraction(
        kb,
        "jan",
        ExtractionRecord(
            "raw/jan.md", "x", "m", "1", "", {"summary": "Redis with a TTL of 30 minutes."}
        ),
    )
    write_article(
        kb,
        article(
            CACHE, "Cache", "We use Redis with a TTL of 30 minutes.\n", ["raw/jan.md"], ["cache"]
        ),
    )
    write_article(
        kb, article(OPS, "Operations", "The cache is Memcached, TTL 15 minutes.\n", [], ["cache"])
    )
    write_article(
        kb,
        article("wiki/topic/zebra.md", "Zebra", "Unrelated text about zebras.\n", [], ["animals"]),
    )


def test_a_grounded_finding_is_kept_and_invented_ones_are_dropped(kb, settings):
    build(kb)
    reply = {
        "issues": [
            {  # real: quotes the cache article, names both
                "kind": "contradiction",
                "paths": [CACHE, OPS],
                "statement": "We use Redis with a TTL of 30 minutes.",
                "why": "Operations says Memcached with 15 minutes.",
            },
            {  # a statement no article makes
                "kind": "unsupported",
                "paths": [OPS],
                "statement": "The cache was retired in 2025.",
                "why": "x",
            },
            {
                "kind": "contradiction",
                "paths": ["wiki/topic/invented.md"],
                "statement": "We use Redis with a TTL",
                "why": "x",
            },
            {
                "kind": "rumour",
                "paths": [CACHE],
                "statement": "We use Redis with a TTL",
                "why": "x",
            },
            "not an object",
        ]
    }
    llm = FakeLLM(lambda stage, messages, schema: reply)
    findings = asyncio.run(deep_lint(kb, settings, budget=5, llm_factory=lambda *a, **k: llm))
    assert [(f.check, f.path) for f in findings] == [("contradiction", CACHE)]
    assert OPS in findings[0].message and "Memcached" in findings[0].message
    # related articles (a shared tag) travel together, with the extraction of their sources
    prompt = llm.calls[0].messages[-1]["content"]
    assert CACHE in prompt and OPS in prompt and "Redis with a TTL of 30 minutes." in prompt


def test_the_budget_caps_the_calls_and_says_what_was_left(kb, settings):
    build(kb)
    llm = FakeLLM(lambda stage, messages, schema: {"issues": []})
    findings = asyncio.run(
        deep_lint(kb, settings, budget=1, batch_chars=120, llm_factory=lambda *a, **k: llm)
    )
    assert len(llm.calls) == 1 and llm.stages() == ["lint"]
    assert [f.check for f in findings] == ["deep-budget"]
    assert "checked 1 of 3" in findings[0].message


def test_a_garbage_reply_gives_no_finding(kb, settings):
    build(kb)
    llm = FakeLLM(lambda stage, messages, schema: {"issues": "none"})
    assert asyncio.run(deep_lint(kb, settings, budget=5, llm_factory=lambda *a, **k: llm)) == []


def test_lint_deep_from_the_command_line_reports_what_the_model_found(kb, fake_model, tmp_path):
    import json

    from click.testing import CliRunner

    from kb_ai.cli import main
    from tests.conftest import compile_notes
    from wiki import read_article

    compile_notes(kb, {"cache.md": "# Cache\n\nWe chose Redis. The TTL is 30 minutes.\n"}, tmp_path)
    (path,) = [p for p in kb.wiki_dir.rglob("*.md")]
    rel = kb.relpath(path)
    edited = read_article(kb, rel)
    edited.body += "\nThe TTL was raised to 90 minutes last week.\n"
    write_article(kb, edited)
    before = len(fake_model.requests)
    result = CliRunner().invoke(main, ["--kb", str(kb.root), "lint", "--deep", "--json"])
    report = json.loads(result.output)
    assert result.exit_code == 0  # the model's findings are warnings for a person to judge
    assert len(fake_model.requests) == before + 1
    deep = [f for f in report["findings"] if f["check"] == "unsupported-claim"]
    assert [f["path"] for f in deep] == [rel] and "90 minutes" in deep[0]["message"]
