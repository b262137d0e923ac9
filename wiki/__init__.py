"""The knowledge base on disk: paths, raw sources, extractions, articles, indexes, history.

Imports nothing of kb-ai but :mod:`kb_ai.errors` and :mod:`kb_ai.grounding` (pure
checks over text, which lint shares with compile and ask).
"""

from wiki.articles import (
    Article,
    article_body_text,
    cut_summary,
    delete_article,
    derive_keys,
    list_articles,
    one_line,
    read_article,
    read_articles,
    visible_text,
    write_article,
)
from wiki.catalog import (
    CatalogEntry,
    build_catalog,
    current_catalog,
    entry_for,
    format_entry,
    load_catalog,
    normalise_article_path,
    parse_master_index,
    refresh_catalog,
    write_indexes,
)
from wiki.extraction import ExtractionRecord, read_extraction, write_extraction
from wiki.files import atomic_write_bytes, atomic_write_text, sha256_bytes
from wiki.git import commit_all, file_history, git, head_sha, show_diff
from wiki.layout import KnowledgeBase
from wiki.log import append_log
from wiki.raw import RawSource, list_raw, read_raw, write_raw
from wiki.slugs import is_slug, slugify, unique_slug
from wiki.state import (
    all_sources,
    apply_migrations,
    compile_under_way,
    finish_run,
    get_meta,
    get_source,
    last_run,
    open_state,
    recent_runs,
    record_run,
    set_meta,
    set_run_stage,
    source_articles,
    start_run,
    upsert_source,
)

__all__ = [
    "Article",
    "CatalogEntry",
    "ExtractionRecord",
    "KnowledgeBase",
    "RawSource",
    "all_sources",
    "append_log",
    "apply_migrations",
    "compile_under_way",
    "get_meta",
    "article_body_text",
    "atomic_write_bytes",
    "atomic_write_text",
    "build_catalog",
    "current_catalog",
    "refresh_catalog",
    "commit_all",
    "cut_summary",
    "delete_article",
    "derive_keys",
    "entry_for",
    "file_history",
    "format_entry",
    "get_source",
    "git",
    "head_sha",
    "is_slug",
    "finish_run",
    "last_run",
    "recent_runs",
    "set_run_stage",
    "start_run",
    "list_articles",
    "list_raw",
    "normalise_article_path",
    "one_line",
    "read_articles",
    "load_catalog",
    "open_state",
    "parse_master_index",
    "read_article",
    "read_extraction",
    "read_raw",
    "record_run",
    "sha256_bytes",
    "show_diff",
    "slugify",
    "set_meta",
    "source_articles",
    "unique_slug",
    "upsert_source",
    "visible_text",
    "write_article",
    "write_extraction",
    "write_indexes",
    "write_raw",
]
