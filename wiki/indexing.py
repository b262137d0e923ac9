"""Keeping the search index, and a table of catalog lines, in step with the articles.

The catalog lines table lets a question on a large wiki fetch the master-index lines of
its ~200 shortlisted articles by key, instead of parsing a master index of tens of MB.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence

from wiki.articles import Article, list_articles, read_article, read_articles
from wiki.catalog import entry_for, format_entry
from wiki.git import changed_since, head_commit
from wiki.layout import KnowledgeBase
from wiki.schema import apply_migrations
from wiki.search import SearchDoc, SearchIndex
from wiki.state import get_meta, set_meta

CATALOG_MIGRATIONS = (
    "CREATE TABLE catalog_lines (path TEXT PRIMARY KEY, slug TEXT NOT NULL, line TEXT NOT NULL)",
    "CREATE INDEX catalog_lines_slug ON catalog_lines(slug)",
)


def search_doc(article: Article) -> SearchDoc:
    return SearchDoc(
        path=article.path,
        title=article.title,
        summary=article.summary,
        keys=list(article.keys),
        tags=list(article.tags),
        body=article.body,
    )


def _slug(path: str) -> str:
    return path.rsplit("/", 1)[-1].removesuffix(".md")


def _store_lines(
    conn: sqlite3.Connection, articles: Sequence[Article], *, replace_all: bool
) -> None:
    apply_migrations(conn, "catalog_lines", CATALOG_MIGRATIONS)
    rows = [(a.path, _slug(a.path), format_entry(entry_for(a))) for a in articles]
    with conn:
        if replace_all:
            conn.execute("DELETE FROM catalog_lines")
        conn.executemany(
            "INSERT OR REPLACE INTO catalog_lines (path, slug, line) VALUES (?, ?, ?)", rows
        )


def refresh_search_index(
    kb: KnowledgeBase,
    conn: sqlite3.Connection,
    changed: Iterable[str] = (),
    articles: Mapping[str, Article] | None = None,
) -> SearchIndex:
    """Index the ``changed`` articles (taken from ``articles`` when there, else read).

    Rebuilds from disk when the index does not cover every other article on disk, or
    covers articles that are gone: a new index, articles added or deleted by hand."""
    index = SearchIndex(conn)
    given = articles or {}
    changed = list(changed)
    on_disk = set(list_articles(kb))
    apply_migrations(conn, "catalog_lines", CATALOG_MIGRATIONS)
    indexed = {row[0] for row in conn.execute("SELECT path FROM catalog_lines")}
    if index.count() != len(indexed) or indexed - on_disk or on_disk - indexed - set(changed):
        docs = _read(kb, sorted(on_disk), given)
        index.sync(search_doc(a) for a in docs)
        _store_lines(conn, docs, replace_all=True)
    else:
        docs = _read(kb, changed, given)
        index.upsert(search_doc(a) for a in docs)
        _store_lines(conn, docs, replace_all=False)
    return index


def follow_commits(kb: KnowledgeBase, conn: sqlite3.Connection) -> None:
    """Articles committed since the search index last looked, brought into it: an edit
    committed with git rather than through kb-ai, a pull. The index keeps the commit it
    last looked at (meta ``search_commit``); a question asks git for HEAD (one process)
    and, when it moved, reads only the articles changed since (those kb-ai indexed
    itself are found unchanged by their content hash and not indexed again)."""
    head = head_commit(kb)
    if head is None:
        return
    seen = get_meta(conn, SEARCH_COMMIT)
    if seen == head:
        return
    changed = changed_since(kb, seen, "wiki") if seen is not None else None
    articles = set(list_articles(kb))
    if changed is None:  # the first look, or git cannot tell: every article is looked at
        changed = sorted(articles)
    present = [p for p in changed if p in articles]
    gone = [p for p in changed if p not in articles]
    if gone:
        remove_from_tables(conn, gone)
    if present:
        refresh_search_index(kb, conn, present)
    set_meta(conn, SEARCH_COMMIT, head)


#: The meta key of the commit the search index last followed (see follow_commits).
SEARCH_COMMIT = "search_commit"


def remove_from_tables(conn: sqlite3.Connection, paths: Sequence[str]) -> None:
    """Drop deleted articles from the search index and the catalog lines."""
    if not paths:
        return
    SearchIndex(conn).remove(paths)
    apply_migrations(conn, "catalog_lines", CATALOG_MIGRATIONS)
    with conn:
        conn.executemany("DELETE FROM catalog_lines WHERE path = ?", [(p,) for p in paths])


def rebuild_tables(conn: sqlite3.Connection, articles: Sequence[Article]) -> None:
    """Make the search index and the catalog lines hold exactly ``articles``."""
    SearchIndex(conn).sync(search_doc(a) for a in articles)
    _store_lines(conn, articles, replace_all=True)


def _read(kb: KnowledgeBase, paths: list[str], given: Mapping[str, Article]) -> list[Article]:
    """The articles at ``paths``, from ``given`` where there; unreadable ones left out."""
    out: list[Article] = []
    for p in paths:
        out.extend([given[p]] if p in given else read_articles(kb, [p], read_article))
    return out


def index_is_current(conn: sqlite3.Connection, articles: int) -> bool:
    """Whether the search index and the catalog lines both hold ``articles`` entries."""
    apply_migrations(conn, "catalog_lines", CATALOG_MIGRATIONS)
    lines = conn.execute("SELECT count(*) FROM catalog_lines").fetchone()[0]
    return lines == articles and SearchIndex(conn).count() == articles


def catalog_lines(conn: sqlite3.Connection, paths: Sequence[str]) -> dict[str, str]:
    """The master-index lines of ``paths`` that exist, by path."""
    apply_migrations(conn, "catalog_lines", CATALOG_MIGRATIONS)
    found: dict[str, str] = {}
    for start in range(0, len(paths), 500):
        chunk = list(paths[start : start + 500])
        marks = ",".join("?" * len(chunk))
        for path, line in conn.execute(
            f"SELECT path, line FROM catalog_lines WHERE path IN ({marks})", chunk
        ):
            found[path] = line
    return found


def paths_by_slug(conn: sqlite3.Connection, slugs: Sequence[str]) -> dict[str, str]:
    """For each slug that names an article, its path (the first by path order)."""
    apply_migrations(conn, "catalog_lines", CATALOG_MIGRATIONS)
    found: dict[str, str] = {}
    for slug in slugs:
        row = conn.execute(
            "SELECT path FROM catalog_lines WHERE slug = ? ORDER BY path LIMIT 1", (slug,)
        ).fetchone()
        if row is not None:
            found[slug] = row[0]
    return found
