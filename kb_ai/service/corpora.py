"""Corpora through the application layer: built, rebuilt and removed as one commit each
with the actor as author; looked up for a question (an unknown name lists the corpora).

A filter that matches nothing says so, with what the wiki holds, and saves nothing.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from kb_ai.errors import KbAiError, UsageError
from kb_ai.lessons import Lesson, read_lessons
from kb_ai.service.opened import OpenKb
from retrieval.connection import SharedConnection
from retrieval.corpora import Match, match_articles
from retrieval.scope import Scope, open_scope
from wiki import atomic_write_text, list_articles, one_line
from wiki.corpora import Corpus, CorpusFilter, corpus_file, corpus_names, read_corpus, write_corpus
from wiki.git import _run, commit_paths, git
from wiki.lock import KbLock

log = logging.getLogger("kb_ai.service")
LOCK = "corpora.lock"  # one corpus write at a time, across processes
DESCRIPTION_MAX = 300


@dataclass(frozen=True)
class Built:
    """A corpus as built: what it holds now, what it held before (a rebuild), the commit."""

    corpus: Corpus
    commit: str | None
    before: tuple[str, ...] = ()

    @property
    def added(self) -> list[str]:
        return [p for p in self.corpus.articles if p not in self.before]

    @property
    def dropped(self) -> list[str]:
        return [p for p in self.before if p not in self.corpus.articles]

    def as_dict(self) -> dict[str, object]:
        return {
            **self.corpus.as_dict(),
            "commit": self.commit,
            "added": self.added,
            "dropped": self.dropped,
        }


def build(
    okb: OpenKb, name: str, flt: CorpusFilter, *, description: str = "", replace_: bool = False
) -> Built:
    """Build corpus ``name`` from ``flt`` and commit it. An existing name is refused
    unless ``replace_`` (``rebuild`` runs its own filter again)."""
    rel = corpus_file(okb.kb, name)
    if not replace_ and (okb.root / rel).exists():
        raise UsageError(
            f"There is a corpus {name!r} already",
            hint=f"kb-ai corpus rebuild {name} builds it again; kb-ai corpus rm {name} removes it",
        )
    description = one_line(description)[:DESCRIPTION_MAX]
    okb.note("corpus build", f"{name}: {flt.describe()}")
    match = _match(okb, flt)
    if not match.articles:
        raise UsageError(
            f"No article matches {flt.describe()}: nothing was saved",
            hint=_why(match, flt, read_lessons(okb.root)),
        )
    corpus = Corpus(
        name,
        flt,
        tuple(a.path for a in match.articles),
        datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        description,
        {a.path: a.title for a in match.articles},
    )
    return _save(okb, corpus, f"corpus: build {name} ({len(corpus.articles)} articles)")


def rebuild(okb: OpenKb, name: str) -> Built:
    """Run corpus ``name``'s filter again over the wiki as it is now and commit the result.
    When nothing matches any more, the corpus is kept as it was (and that is an error)."""
    before = read_corpus(okb.kb, name)
    okb.note("corpus rebuild", name)
    match = _match(okb, before.filter)
    if not match.articles:
        raise UsageError(
            f"No article matches corpus {name}'s filter ({before.filter.describe()}) any more: "
            "it is kept as it was",
            hint=f"kb-ai corpus rm {name} removes it",
        )
    found = tuple(a.path for a in match.articles)
    if found == before.articles:  # the same slice: nothing to commit
        return Built(before, None, before.articles)
    corpus = replace(
        before,
        articles=found,
        built=datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        titles={a.path: a.title for a in match.articles},
    )
    built = _save(okb, corpus, f"corpus: rebuild {name} ({len(corpus.articles)} articles)")
    return replace(built, before=before.articles)


def corpora(okb: OpenKb) -> list[Corpus]:
    """Every corpus of the knowledge base, by name; one whose file does not read (a hand
    edit gone wrong) is left out with a warning, so it does not hide the others."""
    found = []
    for name in corpus_names(okb.kb):
        try:
            found.append(read_corpus(okb.kb, name))
        except KbAiError as exc:
            log.warning("corpus %s left out: %s", name, exc)
    return found


def corpus(okb: OpenKb, name: str) -> Corpus:
    """Corpus ``name``: NotFoundError listing the corpora there are when it is not one."""
    return read_corpus(okb.kb, name)


def scope(okb: OpenKb, name: str) -> Scope:
    """Corpus ``name`` as a question asks it (read whole, or selected inside)."""
    return open_scope(okb.kb, read_corpus(okb.kb, name), okb.settings.corpus_budget_tokens)


def remove(okb: OpenKb, name: str) -> str | None:
    """Remove corpus ``name`` in a commit; returns it. The articles stay as they are."""
    read_corpus(okb.kb, name)  # NotFoundError with the list when it is not one
    rel = corpus_file(okb.kb, name)
    okb.note("corpus rm", name)
    with KbLock(okb.kb.state_dir / LOCK):
        tracked = git(okb.kb, "ls-files", "--", rel).strip()
        (okb.root / rel).unlink()
        if not tracked:
            return None
        return commit_paths(okb.kb, f"corpus: remove {name}", [rel])


def _match(okb: OpenKb, flt: CorpusFilter) -> Match:
    if not flt.query.strip():
        return match_articles(okb.kb, flt)
    state = SharedConnection(okb.kb)
    try:

        def search(query: str, limit: int) -> list[str]:
            with state.use():
                index = state.search_index(len(list_articles(okb.kb)))
                return [hit.path for hit in index.search(query, limit=limit)]

        return match_articles(okb.kb, flt, search)
    finally:
        state.close()


def _why(match: Match, flt: CorpusFilter, lessons: list[Lesson]) -> str:
    """What the wiki holds, for a filter that matched nothing; ``lessons``: those learned
    from sessions, which a pitfall or convention asked by type may be among instead."""
    if not match.total:
        return "the wiki has no articles yet: kb-ai compile <paths> first"
    unknown = [t for t in flt.types if t.lower() not in {k.lower() for k in match.types}]
    if unknown:
        why = f"the wiki has no type {', '.join(unknown)}; its types: {', '.join(match.types)}"
        learned = Counter(x.kind for x in lessons if x.kind in {t.lower() for t in unknown})
        if learned:
            kinds = ", ".join(f"{n} {kind}(s)" for kind, n in sorted(learned.items()))
            why += (
                f". The {kinds} learned from sessions are lessons, not articles (kb-ai learned"
                " list shows them); --source-kind transcript takes the articles those"
                " sessions were compiled into"
            )
        return why
    return f"the wiki has {match.total} articles: loosen the filter (drop a condition, widen the dates)"


def _save(okb: OpenKb, corpus: Corpus, message: str) -> Built:
    """Write and commit ``corpus``; a failed commit leaves the file as it was."""
    rel = corpus.path
    path = okb.root / rel
    with KbLock(okb.kb.state_dir / LOCK):
        before = path.read_text(encoding="utf-8") if path.is_file() else None
        write_corpus(okb.kb, corpus)
        try:
            commit = commit_paths(okb.kb, message, [rel])
        except BaseException:
            if before is None:
                path.unlink(missing_ok=True)
            else:
                atomic_write_text(path, before)
            _run(okb.kb, ("reset", "-q", "--", rel), check=False)
            raise
    return Built(corpus, commit)


__all__ = ["Built", "build", "corpora", "corpus", "rebuild", "remove", "scope"]
