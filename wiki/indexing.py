"""Keeping the search index in step with the articles on disk."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from wiki.articles import Article, list_articles, read_article
from wiki.layout import KnowledgeBase
from wiki.search import SearchDoc, SearchIndex


def search_doc(article: Article) -> SearchDoc:
    return SearchDoc(
        path=article.path, title=article.title, summary=article.summary,
        keys=list(article.keys), tags=list(article.tags), body=article.body,
    )


def refresh_search_index(
    kb: KnowledgeBase, conn: sqlite3.Connection, changed: Iterable[str] = ()
) -> SearchIndex:
    """Index the changed articles; rebuild from disk when the index and the wiki disagree
    on how many articles there are (a new index, or articles added or deleted by hand)."""
    index = SearchIndex(conn)
    paths = list_articles(kb)
    if index.count() != len(paths):
        index.sync(search_doc(read_article(kb, p)) for p in paths)
    else:
        index.upsert(search_doc(read_article(kb, p)) for p in changed)
    return index
