"""The classify checks: a stand-in classifier that files material the way a small model
did (issue 13), and the articles the wiki ends up with."""

from __future__ import annotations

import asyncio

import pytest

from compiler import Compiler
from kb_ai.errors import ConfigError
from kb_ai.settings import load_settings
from tests.compiler.conftest import responder_handler
from tests.fakes.fake_llm import FakeLLM
from wiki import list_articles, read_article

NOTE = """# Session cache moves to Redis

We decided to keep web sessions in Redis, with a TTL of 30 minutes, because the
database was the slowest part of every request.
"""

QUEUE_NOTE = """# Job queue on Postgres

The job queue runs on Postgres with SKIP LOCKED. It keeps finished jobs for 7 days.
"""


def classifier(*articles):
    """The KB responder, except that classify answers ``articles``."""

    def handler(stage, messages, schema):
        if stage == "classify":
            return {"articles": [{"reason": "", "path": "", **a} for a in articles]}
        return responder_handler(stage, messages, schema)

    return FakeLLM(handler)


def compile_text(kb, settings, notes, llm, text, name="note.md"):
    src = notes / name
    src.write_text(text, encoding="utf-8")
    compiler = Compiler(kb, settings, llm_factory=lambda s, **k: llm)
    return asyncio.run(compiler.compile_paths([str(src)]))


def create(title, kind="concept"):
    return {"action": "create", "type": kind, "title": title}


def test_four_generic_articles_from_one_short_note_become_one(kb, settings, notes):
    llm = classifier(
        create("Redis"), create("Session Cache"), create("TTL"), create("Web Application")
    )
    result = compile_text(kb, settings, notes, llm, NOTE)
    assert result.failed == []
    assert result.created == ["wiki/decision/session-cache-moves-to-redis.md"]
    assert list_articles(kb) == result.created
    article = read_article(kb, result.created[0])
    assert article.type == "decision" and "TTL of 30 minutes" in article.body


def test_no_more_new_articles_per_source_than_the_setting(kb, notes):
    proposals = [
        create("Session cache moves to Redis"),
        create("Redis session TTL policy"),
        create("Database load on every request"),
    ]
    settings = load_settings(kb.root, {"model": "fake/model"}, environ={})
    assert settings.max_new_articles_per_source == 2
    result = compile_text(kb, settings, notes, classifier(*proposals), NOTE)
    assert len(result.created) == 2 and len(list_articles(kb)) == 2

    more = load_settings(
        kb.root, {"model": "fake/model", "max_new_articles_per_source": 3}, environ={}
    )
    others = [
        create("Web session storage"),
        create("Cache expiry rules"),
        create("Latency of database requests"),
    ]
    again = compile_text(kb, more, notes, classifier(*others), NOTE, "other.md")
    assert len(again.created) == 3


def seed(kb, settings, notes):
    """A wiki with one article, "Job queue on Postgres"."""
    result = compile_text(kb, settings, notes, FakeLLM(responder_handler), QUEUE_NOTE, "q.md")
    assert result.created == ["wiki/concept/job-queue-on-postgres.md"]
    return result.created[0]


def test_an_update_with_an_empty_path_goes_to_the_article_it_names(kb, settings, notes):
    path = seed(kb, settings, notes)
    llm = classifier({"action": "update", "type": "concept", "title": "Job queue on Postgres"})
    text = "# Queue retention\n\nThe job queue on Postgres now keeps finished jobs for 14 days.\n"
    result = compile_text(kb, settings, notes, llm, text)
    assert result.failed == [] and result.created == []
    assert result.updated == [path]
    assert "14 days" in read_article(kb, path).body
    assert list_articles(kb) == [path]


def test_an_update_with_an_invented_path_and_no_match_becomes_a_new_article(kb, settings, notes):
    seed(kb, settings, notes)
    llm = classifier(
        {
            "action": "update",
            "path": "wiki/concept/invented.md",
            "type": "howto",
            "title": "Rotating the TLS certificates",
        }
    )
    text = "# Certificates\n\nThe TLS certificates are rotated every 90 days by the ops rota.\n"
    result = compile_text(kb, settings, notes, llm, text)
    assert result.failed == []
    assert result.created == ["wiki/howto/rotating-the-tls-certificates.md"]


def test_a_new_article_on_an_existing_subject_updates_it(kb, settings, notes):
    path = seed(kb, settings, notes)
    llm = classifier(create("Postgres job queue"))  # the same words, in another order
    text = "# Queue workers\n\nThe job queue on Postgres runs 4 workers per host.\n"
    result = compile_text(kb, settings, notes, llm, text)
    assert result.created == [] and result.updated == [path]
    assert "4 workers per host" in read_article(kb, path).body


def test_a_generic_subject_is_dropped_when_the_source_has_a_better_home(kb, settings, notes):
    path = seed(kb, settings, notes)
    llm = classifier(
        {"action": "update", "path": path, "type": "concept", "title": ""}, create("TTL")
    )
    text = "# Queue TTL\n\nFinished jobs in the job queue on Postgres have a TTL of 7 days.\n"
    result = compile_text(kb, settings, notes, llm, text)
    assert result.created == [] and result.updated == [path]


def test_a_setting_of_no_new_articles_is_refused_with_a_hint(kb):
    with pytest.raises(ConfigError, match="at least 1"):
        load_settings(
            kb.root, {"model": "fake/model", "max_new_articles_per_source": 0}, environ={}
        )


def test_a_catalog_ranked_again_in_the_same_process_picks_the_same_articles():
    """A long-lived process reuses the term counts of the catalog it ranked last: the
    same slices as counting afresh, and an entry changed since counted again."""
    import compiler.classify as classify
    from compiler.classify import CatalogRanker, terms
    from wiki import CatalogEntry

    def catalog(billing_summary: str) -> list[CatalogEntry]:
        return [
            CatalogEntry("wiki/howto/billing.md", "Billing runs", billing_summary, ["invoice"]),
            CatalogEntry("wiki/concept/cache.md", "Redis cache", "Sessions in Redis.", [],
                         tags=["infra"]),
            CatalogEntry("wiki/decision/mondays.md", "Deploy on Mondays", "Why Mondays.", []),
        ]  # fmt: skip

    def picked(entries: list[CatalogEntry], question: str) -> list[str]:
        return [e.path for e in CatalogRanker(entries).slice(terms(question), 10_000)]

    asked = "where are the redis sessions kept"
    classify._BAGS.clear()
    fresh = picked(catalog("How the monthly invoice run works."), asked)
    assert picked(catalog("How the monthly invoice run works."), asked) == fresh
    changed = catalog("Its Redis sessions: which Redis, what sessions.")
    counted = picked(changed, asked)
    classify._BAGS.clear()
    assert counted == picked(changed, asked) != fresh
