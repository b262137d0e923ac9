"""The article types of a knowledge base, frozen in kb-ai.toml on first use.

Freezing keeps a wiki's layout stable: a new prompt version or model must not start
filing into a different set of folders. A team may edit the list by hand.
"""

from __future__ import annotations

import json

from compiler.classify import DEFAULT_CATEGORIES
from kb_ai.errors import ConfigError
from kb_ai.settings import Settings, read_kb_file
from wiki import KnowledgeBase, atomic_write_text, slugify


def current_categories(kb: KnowledgeBase, settings: Settings) -> list[str]:
    """The KB's categories as they are now, writing nothing (the defaults when none are
    frozen yet): what a run may use before it holds the compile lock."""
    return _chosen(kb, settings) or list(DEFAULT_CATEGORIES)


def ensure_categories(kb: KnowledgeBase, settings: Settings) -> list[str]:
    """The KB's categories; on the first compile, the defaults are written to kb-ai.toml.

    Settings loaded before that first compile (a long-lived server's) say nothing of the
    categories it froze: the file is read again before anything is written to it."""
    if cats := _chosen(kb, settings):
        return cats
    text = kb.config_path.read_text(encoding="utf-8") if kb.config_path.is_file() else ""
    line = f"categories = {json.dumps(list(DEFAULT_CATEGORIES))}\n"
    if text and not text.endswith("\n"):
        text += "\n"
    atomic_write_text(
        kb.config_path,
        text + "# Article types, frozen on the first compile (edit with care).\n" + line,
    )
    return list(DEFAULT_CATEGORIES)


def _chosen(kb: KnowledgeBase, settings: Settings) -> list[str]:
    chosen = settings.categories or tuple(read_kb_file(kb.root).get("categories") or ())
    cats = [slugify(c) for c in chosen]
    if len(set(cats)) != len(cats):
        raise ConfigError("categories in kb-ai.toml must be distinct", hint=str(cats))
    return cats
