"""The search index kept in step with the articles: incremental when it can be."""

from contextlib import closing

import pytest

import wiki.indexing
from wiki import Article, open_state, write_article
from wiki.indexing import catalog_lines, refresh_search_index
from wiki.search import SearchIndex


def article(slug: str, word: str) -> Article:
    return Article(
        f"wiki/topic/{slug}.md",
        slug.title(),
        "topic",
        f"All about {word}.",
        [],
        ["raw/a.md"],
        "2024-01-01",
        "2024-01-01",
        f"# {slug.title()}\n\nThe {word} matters here.\n",
    )


@pytest.fixture
def reads(article_reads):
    return article_reads(wiki.indexing)


def found(conn, word: str) -> list[str]:
    return [hit.path for hit in SearchIndex(conn).search(word)]


def test_new_articles_are_indexed_without_reading_the_others(kb, reads):
    for slug, word in (("alpha", "zeppelin"), ("beta", "kayak")):
        write_article(kb, article(slug, word))
    with closing(open_state(kb)) as conn:
        refresh_search_index(kb, conn)
        assert sorted(reads) == ["wiki/topic/alpha.md", "wiki/topic/beta.md"]
        reads.clear()

        gamma = write_article(kb, article("gamma", "glacier"))
        delta = write_article(kb, article("delta", "tundra"))
        refresh_search_index(kb, conn, [gamma.path, delta.path], {gamma.path: gamma})
        assert reads == [delta.path]  # gamma came from memory, alpha and beta untouched
        assert found(conn, "glacier") == [gamma.path] and found(conn, "tundra") == [delta.path]
        assert found(conn, "zeppelin") == ["wiki/topic/alpha.md"]
        assert set(catalog_lines(conn, [gamma.path, "wiki/topic/alpha.md"])) == {
            gamma.path,
            "wiki/topic/alpha.md",
        }


def test_articles_added_or_deleted_by_hand_trigger_a_rebuild(kb, reads):
    write_article(kb, article("alpha", "zeppelin"))
    with closing(open_state(kb)) as conn:
        refresh_search_index(kb, conn)
        write_article(kb, article("beta", "kayak"))  # not reported as changed
        (kb.root / "wiki/topic/alpha.md").unlink()
        reads.clear()
        refresh_search_index(kb, conn, [])
        assert reads == ["wiki/topic/beta.md"]
        assert found(conn, "kayak") == ["wiki/topic/beta.md"] and found(conn, "zeppelin") == []
