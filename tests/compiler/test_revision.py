"""Revision: what a revised source no longer says leaves every article it fed."""

from __future__ import annotations

from click.testing import CliRunner

from compiler.write import apply_patches
from kb_ai.cli import main
from wiki import list_articles, read_article

CACHE = "wiki/decision/cache.md"


def compile_folder(kb, folder):
    result = CliRunner().invoke(main, ["--kb", str(kb.root), "compile", str(folder)])
    assert result.exit_code == 0, result.output
    return result


def notes_dir(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    return notes


def test_a_revised_note_that_drops_a_fact_leaves_no_article_stating_it(kb, fake_model, tmp_path):
    notes = notes_dir(tmp_path)
    note = notes / "a.md"
    note.write_text("# Cache\n\nWe chose Redis for sessions. The TTL is 30 minutes.\n")
    compile_folder(kb, notes)
    assert "30 minutes" in read_article(kb, CACHE).body
    note.write_text("# Cache\n\nWe chose Redis for sessions. Priya owns the rollout.\n")
    compile_folder(kb, notes)
    body = read_article(kb, CACHE).body
    assert "30 minutes" not in body and "Priya owns the rollout" in body
    assert read_article(kb, CACHE).sources == ["raw/cache.md"]


def test_a_shared_article_is_rewritten_from_all_its_sources(kb, fake_model, tmp_path):
    notes = notes_dir(tmp_path)
    (notes / "a.md").write_text("# Cache\n\nWe chose Redis for sessions. The TTL is 30 minutes.\n")
    compile_folder(kb, notes)
    (notes / "b.md").write_text("# Cache\n\nThe cache runs on three replicas in Frankfurt.\n")
    compile_folder(kb, notes)
    (notes / "a.md").write_text("# Cache\n\nWe chose Redis for sessions. The TTL is 15 minutes.\n")
    calls = len(fake_model.requests)
    compile_folder(kb, notes)
    article = read_article(kb, CACHE)
    assert "15 minutes" in article.body and "30 minutes" not in article.body
    assert "Frankfurt" in article.body  # the other source's stored extraction, not a re-read
    assert sorted(article.sources) == ["raw/cache-2.md", "raw/cache.md"]
    assert len(fake_model.requests) - calls == 3  # extract, classify, one write


def test_an_article_the_source_no_longer_feeds_loses_it(kb, fake_model, tmp_path):
    notes = notes_dir(tmp_path)
    (notes / "a.md").write_text("# Cache\n\nWe chose Redis for sessions. The TTL is 30 minutes.\n")
    compile_folder(kb, notes)
    (notes / "b.md").write_text("# Cache\n\nThe cache runs on three replicas in Frankfurt.\n")
    (notes / "c.md").write_text("# Queue\n\nJobs go through RabbitMQ with 4 workers.\n")
    compile_folder(kb, notes)
    # a.md now is about billing: the cache article loses it; c.md about billing too, so
    # the queue article has no source left and goes
    (notes / "a.md").write_text("# Billing\n\nInvoices go out on the first working day.\n")
    (notes / "c.md").write_text("# Billing\n\nRefunds take 5 working days.\n")
    compile_folder(kb, notes)
    cache = read_article(kb, CACHE)
    assert cache.sources == ["raw/cache-2.md"]
    assert "Redis" not in cache.body and "Frankfurt" in cache.body
    assert "wiki/concept/queue.md" not in list_articles(kb)
    assert "wiki/concept/billing.md" in list_articles(kb)


def test_a_section_patch_may_remove_a_section():
    body = "Intro.\n\n## Cache\n\nRedis, TTL 30 minutes.\n\n## Owners\n\nPriya."
    patched = apply_patches(
        body,
        [
            {"section": "Cache", "op": "remove", "content": ""},
            {"section": "Owners", "op": "append", "content": "And Marcus."},
        ],
    )
    assert "Redis" not in patched and "## Cache" not in patched
    assert patched.startswith("Intro.") and "Priya.\n\nAnd Marcus." in patched


def test_a_hub_article_with_more_material_than_the_budget_is_merged_not_rewritten(
    kb, fake_model, tmp_path, monkeypatch
):
    from compiler import recompose

    monkeypatch.setattr(recompose, "MATERIAL_FACTOR", 0)  # every article counts as a hub
    notes = notes_dir(tmp_path)
    (notes / "a.md").write_text("# Cache\n\nWe chose Redis for sessions. The TTL is 30 minutes.\n")
    compile_folder(kb, notes)
    (notes / "b.md").write_text("# Cache\n\nThe cache runs on three replicas in Frankfurt.\n")
    compile_folder(kb, notes)
    prompt = fake_model.requests[-1]["messages"][-1]["content"]
    assert "<article>" in prompt and "raw/cache.md" not in prompt.split("</article>")[-1]
    body = read_article(kb, CACHE).body
    assert "30 minutes" in body and "Frankfurt" in body


def test_an_article_deleted_by_a_revision_is_named_with_its_cause(kb, fake_model, tmp_path):
    """git log and log.md say which article went and which source's revision took it."""
    from wiki.git import git
    from wiki.search import SearchIndex
    from wiki.state import open_state

    notes = notes_dir(tmp_path)
    (notes / "c.md").write_text("# Queue\n\nJobs go through RabbitMQ with 4 workers.\n")
    compile_folder(kb, notes)
    assert "wiki/concept/queue.md" in list_articles(kb)
    (notes / "c.md").write_text("# Billing\n\nRefunds take 5 working days.\n")
    out = compile_folder(kb, notes).output
    assert "wiki/concept/queue.md" not in list_articles(kb)
    source = str(notes / "c.md")
    why = f"wiki/concept/queue.md: no source left: raw/queue.md (from {source}) no longer feeds it"
    assert f"deleted  {why}" in out
    message = git(kb, "log", "-1", "--format=%B")
    assert "1 deleted" in message.splitlines()[0]
    assert f"deleted {why}" in message.splitlines()
    log = kb.log_path.read_text(encoding="utf-8").split("## ")[-1]
    assert f"- deleted {why}" in log.splitlines()
    # and nothing lists or finds it any more
    assert "wiki/concept/queue.md" not in kb.master_index_path.read_text(encoding="utf-8")
    conn = open_state(kb)
    try:
        assert "wiki/concept/queue.md" not in {h.path for h in SearchIndex(conn).search("RabbitMQ")}
    finally:
        conn.close()


def test_an_article_whose_other_source_cannot_be_read_is_kept_not_deleted(kb, fake_model, tmp_path):
    notes = notes_dir(tmp_path)
    (notes / "a.md").write_text("# Cache\n\nWe chose Redis for sessions. The TTL is 30 minutes.\n")
    compile_folder(kb, notes)
    (notes / "b.md").write_text("# Cache\n\nThe cache runs on three replicas in Frankfurt.\n")
    compile_folder(kb, notes)
    assert sorted(read_article(kb, CACHE).sources) == ["raw/cache-2.md", "raw/cache.md"]
    (kb.root / "extraction" / "cache-2.md").write_bytes(b"\xff\xfe not an extraction")
    (notes / "a.md").write_text("# Billing\n\nInvoices go out on the first working day.\n")
    result = CliRunner().invoke(main, ["--kb", str(kb.root), "compile", str(notes)])
    assert result.exit_code == 1, result.output
    assert "raw/cache-2.md" in result.output and "compile --force" in result.output
    assert CACHE in list_articles(kb)  # b.md still says it: the article stays
    assert "Frankfurt" in read_article(kb, CACHE).body
