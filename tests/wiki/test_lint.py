"""`kb-ai lint`: each planted defect is found, and --fix repairs the mechanical ones."""

from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner

from kb_ai.cli import main
from tests.conftest import compile_notes
from wiki import (
    Article,
    ExtractionRecord,
    RawSource,
    git,
    read_article,
    write_article,
    write_extraction,
    write_raw,
)
from wiki.linkcheck import LinkResolver, body_links

NOTES = {
    "cache.md": "# Cache decision\n\nThe team chose Redis for the session cache in January"
    " 2026. The TTL is 30 minutes. Priya owns the rollout.\n",
    "deploy.md": "# Deploy process\n\nDeploys run on Tuesdays. The pipeline takes 45 minutes"
    " and uses the Redis cache for builds.\n",
}
CACHE = "wiki/decision/cache-decision.md"


def lint(kb, *args):
    result = CliRunner().invoke(main, ["--kb", str(kb.root), "lint", "--json", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, json.loads(result.output)


def checks_at(report, path=None):
    return {(f["check"], f["path"]) for f in report["findings"] if path in (None, f["path"])}


@pytest.fixture
def compiled(kb, fake_model, tmp_path):
    compile_notes(kb, NOTES, tmp_path)
    return kb


def plant_defects(kb):
    """One of each thing lint looks for, as a person or a bad run would leave it."""
    cache = read_article(kb, CACHE)
    cache.body += (
        "\nSee [[no-such-page|the old plan]] and [the runbook](../concept/runbook.md)."
        "\nThe TTL was raised to 90 minutes by Marcus.\n"
    )
    write_article(kb, cache)
    write_article(  # hand-written: in no index, backed by no source
        kb,
        Article(
            "wiki/topic/handbook.md", "Handbook", "topic", "How we work.", [], [], "", "", "Hi.\n"
        ),
    )
    write_article(  # cites a source that is gone
        kb,
        Article(
            "wiki/topic/legacy.md",
            "Legacy",
            "topic",
            "Old.",
            [],
            ["raw/deleted.md"],
            "",
            "",
            "Old.\n",
        ),
    )
    index = kb.master_index_path
    index.write_text(
        index.read_text(encoding="utf-8") + "- [Ghost](wiki/topic/ghost.md) — gone\n",
        encoding="utf-8",
    )
    write_raw(kb, RawSource("orphan-note", "Orphan", "/x/orphan.md", "note", "0" * 64, "", "Text."))
    (kb.wiki_dir / "topic" / "broken.md").write_text("---\ntitle: [unclosed\n---\n\nBody.\n")
    (kb.wiki_dir / "topic" / "thin.md").write_text("---\ntitle: Thin\ntype: topic\n---\n\nBody.\n")
    (kb.wiki_dir / "topic" / "latin1.md").write_bytes(
        "---\ntitle: Caf\xe9\n---\n".encode("latin-1")
    )


def test_a_clean_compiled_wiki_passes_without_a_model_call(compiled, fake_model):
    calls = len(fake_model.requests)
    code, report = lint(compiled)
    assert (code, report["errors"], report["warnings"]) == (0, 0, 0), report
    assert report["articles"] == 2
    assert len(fake_model.requests) == calls


def test_lint_finds_each_planted_defect_and_fix_repairs_the_mechanical_ones(compiled):
    kb = compiled
    plant_defects(kb)
    code, report = lint(kb)
    assert code == 1
    found = checks_at(report)
    expected = {
        ("dead-wikilink", CACHE),
        ("dead-link", CACHE),
        ("unsupported", CACHE),
        ("unindexed", "wiki/topic/handbook.md"),
        ("no-source", "wiki/topic/handbook.md"),
        ("missing-source", "wiki/topic/legacy.md"),
        ("index-orphan", "index/master-index.md"),
        ("unused-source", "raw/orphan-note.md"),
        ("frontmatter", "wiki/topic/broken.md"),
        ("frontmatter", "wiki/topic/thin.md"),
        ("frontmatter", "wiki/topic/latin1.md"),
        ("tables", ".kb-ai/state.db"),
    }
    assert expected <= found, expected - found
    unsupported = next(f for f in report["findings"] if f["check"] == "unsupported")
    assert "'90'" in unsupported["message"] and "'Marcus'" in unsupported["message"]
    assert "Redis" not in unsupported["message"] and "'30'" not in unsupported["message"]

    code, fixed = lint(kb, "--fix")
    assert code == 1  # a broken frontmatter and a missing source need a person
    left = checks_at(fixed)
    for check in ("dead-wikilink", "dead-link", "unindexed", "index-orphan", "tables"):
        assert not any(c == check for c, _ in left), (check, left)
    for still in ("frontmatter", "missing-source", "unsupported", "no-source", "unused-source"):
        assert any(c == still for c, _ in left), still
    body = read_article(kb, CACHE).body
    assert "See the old plan and the runbook." in body  # the reader's text is kept
    assert "[[" not in body and "](" not in body
    index = kb.master_index_path.read_text(encoding="utf-8")
    assert "wiki/topic/handbook.md" in index and "ghost" not in index
    assert fixed["commit"] and git(kb, "status", "--porcelain", "--", "index", CACHE) == ""
    assert "lint --fix" in git(kb, "log", "-1", "--format=%s")


def test_search_tables_out_of_step_are_found_and_rebuilt(compiled):
    conn = sqlite3.connect(compiled.state_db)
    with conn:
        conn.execute("DELETE FROM catalog_lines WHERE path = ?", (CACHE,))
    conn.close()
    code, report = lint(compiled)
    assert code == 0 and ("tables", ".kb-ai/state.db") in checks_at(report)
    code, report = lint(compiled, "--fix")
    assert (code, report["findings"]) == (0, [])


def test_a_wikilink_resolves_by_slug_path_or_title_and_code_is_not_read():
    resolver = LinkResolver([("wiki/topic/release-process.md", "Release Process")])
    for target in (
        "release-process",
        "topic/release-process",
        "Release process",
        "wiki/topic/release-process.md",
    ):
        assert resolver.find(target) == "wiki/topic/release-process.md", target
    assert resolver.find("release") is None
    body = "Use `[[not-a-link]]`.\n```\n[[nor-this]]\n```\n[[release-process|the process]]\n"
    assert [link.target for link in body_links(body, "wiki/topic/x.md")] == ["release-process"]


def test_claims_in_any_spelling_of_the_material_are_supported(kb):
    """Lint holds an article to its source's extraction with the grounding check that
    compile and ask use: 1,000 is 1000, 2 March 2026 is in 2026-03, thirty is 30."""
    write_raw(kb, RawSource("budget", "Budget", "/n/budget.md", "note", "0" * 64, "", "x"))
    facts = {"facts": ["Budget of 1,000 euros approved on 2 March 2026 by Priya for thirty days."]}
    write_extraction(kb, "budget", ExtractionRecord("raw/budget.md", "0" * 64, "m", "v", "", facts))
    body = (
        "## Budget 2027\n\nIn 2026-03 the team led by Priya approved 1000 euros for 30 days,"
        " which Marcus opposed, and 250 were kept for `S3 backups` and 5 steps.\n"
        # a date spread over words, and a capitalised word that only opens a sentence
        "\nThe budget was signed on 3 March 2026. See the budget.\n"
    )
    write_article(
        kb, Article("wiki/topic/budget.md", "Budget", "topic", "The budget.", [], ["raw/budget.md"],
                    "2026-03-02", "2026-03-02", body),
    )  # fmt: skip
    _, report = lint(kb)
    (finding,) = [f for f in report["findings"] if f["check"] == "unsupported"]
    assert finding["message"] == (
        "its sources never state name 'Marcus', number '250', date '3 March 2026'"
    )


def test_lint_outside_a_knowledge_base_says_what_to_do(tmp_path):
    result = CliRunner().invoke(main, ["--kb", str(tmp_path), "lint"])
    assert result.exit_code == 2 and "kb-ai init" in result.output


def age(kb, seconds=3600):
    """Every article, extraction and raw copy as if written an hour ago (kept facts are only
    trusted for files not modified in the last moments)."""
    import os
    import time

    past = time.time_ns() - seconds * 1_000_000_000
    for folder in (kb.wiki_dir, kb.extraction_dir, kb.root / "raw"):
        for path in folder.rglob("*.md"):
            os.utime(path, ns=(past, past))


def test_a_second_lint_reads_no_unchanged_article_and_still_sees_every_change(
    compiled, monkeypatch
):
    import wiki.lintfacts

    kb = compiled
    age(kb)
    assert lint(kb)[1]["findings"] == []
    parsed = []
    real = wiki.lintfacts.load_document
    monkeypatch.setattr(
        wiki.lintfacts,
        "load_document",
        lambda text, where: parsed.append(where) or real(text, where),
    )
    code, report = lint(kb)
    assert (code, report["findings"], report["articles"], parsed) == (0, [], 2, [])

    # an edited article is read again: its new dead link and invented number are found
    cache = read_article(kb, CACHE)
    cache.body += "\nSee [[no-such-page|the old plan]]. The TTL was raised to 90 minutes.\n"
    write_article(kb, cache)
    code, report = lint(kb)
    assert parsed == [CACHE]
    assert code == 1
    assert {("dead-wikilink", CACHE), ("unsupported", CACHE)} <= checks_at(report)
    (unsupported,) = [f for f in report["findings"] if f["check"] == "unsupported"]
    assert "'90'" in unsupported["message"]


def test_kept_facts_follow_a_deleted_article_and_a_changed_extraction(compiled):
    kb = compiled
    deploy = next(p for p in wiki_paths(kb) if p != CACHE)
    cache = read_article(kb, CACHE)
    cache.body += f"\nSee [[{deploy.rsplit('/', 1)[1][:-3]}]].\n"
    write_article(kb, cache)
    lint(kb, "--fix")  # the search tables take the edit in
    age(kb)
    assert lint(kb)[1]["findings"] == []
    assert lint(kb)[1]["findings"] == []  # from the kept facts
    # a source no longer states the TTL (its text and extraction changed): the unchanged
    # article's claim is held to the new ones
    (slug,) = [s.removeprefix("raw/").removesuffix(".md") for s in cache.sources]
    for changed in (kb.extraction_dir / f"{slug}.md", kb.root / "raw" / f"{slug}.md"):
        changed.write_text(changed.read_text(encoding="utf-8").replace("30", "35"))
    code, report = lint(kb)
    unsupported = [f for f in report["findings"] if f["check"] == "unsupported"]
    assert [f["path"] for f in unsupported] == [CACHE] and "'30'" in unsupported[0]["message"]
    # the article a wikilink leads to is deleted: the link is dead, though the linking
    # article did not change
    (kb.root / deploy).unlink()
    code, report = lint(kb)
    assert code == 1 and ("dead-wikilink", CACHE) in checks_at(report)
    assert ("index-orphan", "index/master-index.md") in checks_at(report)


def wiki_paths(kb):
    from wiki import list_articles

    return list_articles(kb)
