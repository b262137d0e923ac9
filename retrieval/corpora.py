"""Which articles a corpus filter matches (wiki/corpora.py keeps the corpus files).

Every condition given must hold: its type is one of ``types``; one of its tags is one of
``topics``; one of its sources is of a kind in ``source_kinds``; a path under one of
``files`` is named in the article or in one of its sources (a transcript's "→ Edit:
kb_ai/hooks/run.py" line, a patch's file list); its life, from created to updated,
touches ``since``..``until``; the search finds it for ``query``. With a query the
articles come best match first; without, the most recently updated first. ``limit``
keeps the first that many.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kb_ai.errors import KbAiError
from wiki import Article, KnowledgeBase, list_articles, read_articles, read_raw
from wiki.corpora import CorpusFilter

#: Hits asked of the search for a corpus query: every article it finds, up to this.
QUERY_HITS = 5_000


@dataclass(frozen=True)
class Match:
    """The articles a filter matched, in corpus order, and what the wiki holds (to say
    why nothing matched)."""

    articles: list[Article]
    types: list[str]  # the types of all articles of the wiki
    total: int  # articles in the wiki


def match_articles(
    kb: KnowledgeBase,
    flt: CorpusFilter,
    search: Callable[[str, int], list[str]] | None = None,
) -> Match:
    """The articles of ``kb`` that ``flt`` holds. ``search(query, limit)``: article paths
    best first, needed when the filter has a query."""
    everything = list(read_articles(kb, list_articles(kb)))
    types = sorted({a.type for a in everything})
    kinds = _SourceLookup(kb)
    files = [_path_pattern(p) for p in flt.files if p.strip()]
    wanted_types = {t.strip().lower() for t in flt.types}
    wanted_topics = {t.strip().lower() for t in flt.topics}

    def holds(a: Article) -> bool:
        if wanted_types and a.type.lower() not in wanted_types:
            return False
        if wanted_topics and not wanted_topics & {t.lower() for t in a.tags}:
            return False
        if flt.since and (a.updated or a.created)[:10] < flt.since:
            return False
        if flt.until and (a.created or a.updated)[:10] > flt.until:
            return False
        if flt.source_kinds and not set(flt.source_kinds) & kinds.kinds(a.sources):
            return False
        return not files or _names_a_file(a, files, kinds)

    kept = [a for a in everything if holds(a)]
    if flt.query.strip():
        if search is None:
            raise ValueError("a corpus query needs a search")
        by_path = {a.path: a for a in kept}
        kept = [by_path[p] for p in search(flt.query, QUERY_HITS) if p in by_path]
    else:
        kept.sort(key=lambda a: a.path)
        kept.sort(key=lambda a: a.updated or a.created, reverse=True)
    if flt.limit:
        kept = kept[: flt.limit]
    return Match(kept, types, len(everything))


def _path_pattern(prefix: str) -> re.Pattern[str]:
    """A path starting with ``prefix`` wherever a path may start: at the start of a word,
    or after a slash (an absolute path of the same file)."""
    prefix = prefix.strip().removeprefix("./")
    return re.compile(r"(?<![\w.-])" + re.escape(prefix))


def _names_a_file(
    article: Article, patterns: list[re.Pattern[str]], sources: _SourceLookup
) -> bool:
    texts: Iterable[str] = (article.body, " ".join(article.keys))
    if any(p.search(t) for p in patterns for t in texts):
        return True
    return any(p.search(sources.text(s)) for s in article.sources for p in patterns)


class _SourceLookup:
    """Raw sources read once each, for the kind and text of the articles' sources."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self._read: dict[str, tuple[str, str]] = {}

    def _get(self, rel: str) -> tuple[str, str]:
        if rel not in self._read:
            try:
                raw = read_raw(self.kb, rel)
                self._read[rel] = (raw.kind, raw.text)
            except (OSError, ValueError, KbAiError):
                self._read[rel] = ("", "")  # a source gone or unreadable matches nothing
        return self._read[rel]

    def kinds(self, rels: Iterable[str]) -> set[str]:
        return {self._get(r)[0] for r in rels} - {""}

    def text(self, rel: str) -> str:
        return self._get(rel)[1]
