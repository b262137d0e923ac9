"""Removing sources: what a removed source said leaves the wiki, in one commit."""

from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner

from kb_ai.cli import main
from tests.conftest import shared_data
from tests.fakes.openai_server import Reply
from wiki import git, list_articles, read_article

CACHE = "wiki/decision/cache.md"
BILLING = "wiki/concept/billing.md"


def run(kb, *args):
    result = CliRunner().invoke(main, ["--kb", str(kb.root), *args])
    return result


def compile_folder(kb, folder, *names, prune=False):
    args = ["compile", *(["--prune"] if prune else []), str(folder)]
    result = run(kb, *args)
    assert result.exit_code == 0, result.output


def build(kb, tmp_path):
    """cache.md fed by a.md and b.md (b came later, on the same subject); billing by c.md."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text(
        "# Cache\n\nWe chose Redis for the session cache. The TTL is 30 minutes.\n"
    )
    (notes / "c.md").write_text(
        "# Billing\n\nInvoices are sent on the first working day of each month.\n"
    )
    compile_folder(kb, notes)
    (notes / "b.md").write_text("# Cache\n\nThe cache runs on three replicas in Frankfurt.\n")
    compile_folder(kb, notes)
    assert sorted(read_article(kb, CACHE).sources) == ["raw/cache-2.md", "raw/cache.md"]
    return notes


def searchable(kb, path):
    conn = sqlite3.connect(kb.state_db)
    try:
        return (
            conn.execute("SELECT 1 FROM search_docs WHERE path = ?", (path,)).fetchone() is not None
        )
    finally:
        conn.close()


def test_rm_of_a_lone_source_deletes_its_article_everywhere(kb, fake_model, tmp_path):
    notes = build(kb, tmp_path)
    result = run(kb, "rm", str(notes / "c.md"), "--reason", "billing moved to the finance wiki")
    assert result.exit_code == 0, result.output
    assert BILLING not in list_articles(kb)
    assert (
        not (kb.root / "raw" / "c.md").exists() and not (kb.root / "extraction" / "c.md").exists()
    )
    assert BILLING not in kb.master_index_path.read_text() and not searchable(kb, BILLING)
    message = git(kb, "log", "-1", "--format=%B")
    assert "billing moved to the finance wiki" in message and f"deleted {BILLING}" in message
    assert git(kb, "status", "--porcelain") == ""
    assert run(kb, "lint").exit_code == 0


def test_rm_of_a_shared_source_rewrites_the_article_without_it(kb, fake_model, tmp_path):
    build(kb, tmp_path)
    calls = len(fake_model.requests)
    result = run(kb, "rm", "raw/cache.md")  # a.md by its raw path; still on disk
    assert result.exit_code == 0, result.output
    article = read_article(kb, CACHE)
    assert "Redis" not in article.body and "30 minutes" not in article.body
    assert "Frankfurt" in article.body and article.sources == ["raw/cache-2.md"]
    assert len(fake_model.requests) == calls + 1  # one write call for the one article
    assert searchable(kb, CACHE) and BILLING in list_articles(kb)
    status = json.loads(run(kb, "status", "--json").output)
    assert status["sources"]["total"] == 2


def test_a_failed_rewrite_changes_nothing(kb, fake_model, tmp_path):
    build(kb, tmp_path)
    before = git(kb, "rev-parse", "HEAD")
    fake_model.queue(*[Reply("not json at all {")] * 8)
    result = run(kb, "rm", "cache")  # a.md by its raw slug
    assert result.exit_code == 1
    assert git(kb, "rev-parse", "HEAD") == before and git(kb, "status", "--porcelain") == ""
    assert "Redis" in read_article(kb, CACHE).body and (kb.root / "raw" / "cache.md").exists()


def test_compile_prune_removes_files_gone_from_the_folder(kb, fake_model, tmp_path):
    notes = build(kb, tmp_path)
    (notes / "c.md").unlink()
    (notes / "a.md").unlink()
    compile_folder(kb, notes, prune=True)
    assert BILLING not in list_articles(kb)
    assert read_article(kb, CACHE).sources == ["raw/cache-2.md"]
    assert "gone from" in git(kb, "log", "--format=%B", "-2")


def test_rm_of_something_never_compiled_says_so_and_changes_nothing(kb, fake_model, tmp_path):
    build(kb, tmp_path)
    before = git(kb, "rev-parse", "HEAD")
    result = run(kb, "rm", "notes/nothing-*.md", "cache")
    assert result.exit_code == 2 and "nothing-" in result.output
    assert git(kb, "rev-parse", "HEAD") == before


def test_removing_a_converted_document_takes_its_original_file_too(kb, fake_model, tmp_path):
    document = shared_data("documents") / "test.docx"
    if not document.is_file():
        pytest.skip("../shared/data/documents/test.docx is not on this machine")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "test.docx").write_bytes(document.read_bytes())
    compile_folder(kb, folder)
    (raw,) = [p for p in (kb.root / "raw").iterdir() if p.suffix == ".md"]
    (original,) = [p for p in (kb.root / "raw").iterdir() if p.suffix == ".docx"]
    result = run(kb, "rm", f"raw/{raw.name}", "--json")
    assert result.exit_code == 0, result.output
    assert not raw.exists() and not original.exists()  # nothing of the document left
    assert "raw/" + original.name not in git(kb, "ls-tree", "-r", "--name-only", "HEAD")
