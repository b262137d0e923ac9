"""Review: a run held on review/<run> leaves main untouched until it is approved."""

from __future__ import annotations

import json
import sqlite3

from click.testing import CliRunner

from kb_ai.cli import main
from wiki import git, list_articles

CACHE = "wiki/concept/cache.md"
QUEUE = "wiki/concept/queue.md"


def run(kb, *args):
    return CliRunner().invoke(main, ["--kb", str(kb.root), *args])


def compile_note(kb, tmp_path, name, text, *flags):
    notes = tmp_path / "notes"
    notes.mkdir(exist_ok=True)
    (notes / name).write_text(text)
    result = run(kb, "compile", "--json", *flags, str(notes / name))
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def searchable(kb, path):
    conn = sqlite3.connect(kb.state_db)
    try:
        return (
            conn.execute("SELECT 1 FROM search_docs WHERE path = ?", (path,)).fetchone() is not None
        )
    finally:
        conn.close()


def pending_runs(kb):
    return json.loads(run(kb, "review", "list", "--json").output)


def test_a_review_run_leaves_main_untouched_until_approved(kb, fake_model, tmp_path):
    compile_note(kb, tmp_path, "queue.md", "# Queue\n\nJobs go through RabbitMQ.\n")
    head = git(kb, "rev-parse", "HEAD")
    result = compile_note(
        kb, tmp_path, "cache.md", "# Cache\n\nWe chose Redis. The TTL is 30 minutes.\n", "--review"
    )
    assert result["review"].startswith("review/")
    assert git(kb, "rev-parse", "HEAD") == head and git(kb, "status", "--porcelain") == ""
    assert CACHE not in list_articles(kb) and not searchable(kb, CACHE)
    (waiting,) = pending_runs(kb)
    shown = run(kb, "review", "show", waiting["run"])
    assert (
        shown.exit_code == 0 and f"+++ b/{CACHE}" in shown.output and "30 minutes" in shown.output
    )
    # the run's source waits in review: compiling it again makes no new run
    again = compile_note(
        kb, tmp_path, "cache.md", "# Cache\n\nWe chose Redis. The TTL is 30 minutes.\n"
    )
    assert again["skipped"] and git(kb, "rev-parse", "HEAD") == head

    approved = run(kb, "review", "approve", waiting["run"])
    assert approved.exit_code == 0, approved.output
    assert CACHE in list_articles(kb) and searchable(kb, CACHE)
    assert pending_runs(kb) == [] and "review/" not in git(kb, "branch", "--list")
    assert run(kb, "lint").exit_code == 0


def test_reject_drops_the_run_and_its_sources_compile_again(kb, fake_model, tmp_path):
    text = "# Cache\n\nWe chose Redis. The TTL is 30 minutes.\n"
    compile_note(kb, tmp_path, "cache.md", text, "--review")
    (waiting,) = pending_runs(kb)
    rejected = run(kb, "review", "reject", waiting["run"])
    assert rejected.exit_code == 0 and "1 source(s) pending again" in rejected.output
    assert "review/" not in git(kb, "branch", "--list") and CACHE not in list_articles(kb)
    result = compile_note(kb, tmp_path, "cache.md", text)
    assert len(result["compiled"]) == 1 and CACHE in list_articles(kb)
    assert run(kb, "review", "approve", waiting["run"]).exit_code == 2  # rejected already


def test_approve_after_main_moved_merges_and_rebuilds_the_indexes(kb, fake_model, tmp_path):
    compile_note(
        kb, tmp_path, "cache.md", "# Cache\n\nWe chose Redis. The TTL is 30 minutes.\n", "--review"
    )
    compile_note(kb, tmp_path, "queue.md", "# Queue\n\nJobs go through RabbitMQ with 4 workers.\n")
    (waiting,) = pending_runs(kb)
    approved = run(kb, "review", "approve", waiting["run"])
    assert approved.exit_code == 0, approved.output
    assert {CACHE, QUEUE} <= set(list_articles(kb))
    index = kb.master_index_path.read_text()
    assert index.count(CACHE) == 1 and index.count(QUEUE) == 1 and "2 articles" in index
    assert git(kb, "status", "--porcelain") == ""
    assert run(kb, "lint").exit_code == 0


def test_review_true_in_kb_ai_toml_holds_every_run(kb, fake_model, tmp_path):
    kb.config_path.write_text(kb.config_path.read_text() + "review = true\n")
    result = compile_note(kb, tmp_path, "cache.md", "# Cache\n\nWe chose Redis.\n")
    assert result["review"] and CACHE not in list_articles(kb)
    assert git(kb, "status", "--porcelain") == ""
    assert "review = true" in kb.config_path.read_text()  # the setting is not held back
    assert compile_note(kb, tmp_path, "queue.md", "# Queue\n\nJobs use RabbitMQ.\n")["review"]


def test_an_unknown_run_says_how_to_list_them(kb):
    result = run(kb, "review", "show", "42")
    assert result.exit_code == 2 and "review list" in result.output


def test_holding_a_run_leaves_the_users_other_files_alone(kb, fake_model, tmp_path):
    readme = kb.root / "README.md"
    readme.write_text("Our wiki.\n")
    git(kb, "add", "README.md")
    git(kb, "commit", "-q", "-m", "a readme of our own")
    readme.write_text("Our wiki, being edited.\n")
    (kb.root / "scratch.txt").write_text("not kb-ai's")
    compile_note(kb, tmp_path, "cache.md", "# Cache\n\nWe chose Redis.\n", "--review")
    assert readme.read_text() == "Our wiki, being edited.\n"
    assert (kb.root / "scratch.txt").read_text() == "not kb-ai's"
    assert CACHE not in list_articles(kb) and not (kb.root / "raw" / "cache.md").exists()
