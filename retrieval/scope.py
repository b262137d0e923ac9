"""Asking inside a corpus: the question answered from its articles only.

A corpus whose articles fit ``corpus_budget_tokens`` is read whole for every question:
no page selection, and its pages go into the answer prompt in the corpus's own order,
before the question, so the prompt's head is the same byte for byte from one question
to the next and a provider's prompt cache holds it. A larger corpus is answered as the
whole wiki is (shortlist, selection, follow-ups), within its articles, and the answer
says so. Articles the corpus held that are gone from the wiki since it was built are
left out, and said.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from retrieval.candidates import Catalog, estimate_tokens
from retrieval.pages import Page
from wiki import KnowledgeBase, read_article
from wiki.corpora import Corpus


@dataclass(frozen=True)
class Scope:
    """A corpus as a question sees it."""

    name: str
    description: str
    paths: tuple[str, ...]  # its articles in the wiki now, in the corpus's order
    missing: tuple[str, ...]  # its articles gone from the wiki since it was built
    pages: tuple[Page, ...]  # all of them, read whole, when ``whole``
    whole: bool
    budget_tokens: int

    def note(self) -> str:
        """What the reader is told about where the answer comes from."""
        n = len(self.paths)
        if self.whole:
            said = f"Answered from corpus {self.name}: its {n} article(s) read whole."
        else:
            said = (
                f"Corpus {self.name} holds {n} articles, more than one question reads whole "
                f"(corpus_budget_tokens = {self.budget_tokens:,}): pages were selected "
                "inside it."
            )
        if self.missing:
            said += (
                f" {len(self.missing)} of its articles are no longer in the wiki: "
                f"kb-ai corpus rebuild {self.name}."
            )
        return said

    def within(self, paths: Iterable[str]) -> list[str]:
        """Those of ``paths`` that are articles of the corpus, in their order."""
        mine = set(self.paths)
        return [p for p in paths if p in mine]

    def catalog(self, whole: Catalog) -> Catalog:
        """The wiki's catalog cut to the corpus's articles."""
        lines = whole.lookup(list(self.paths))
        text = "\n".join(lines.values())
        return Catalog(whole.kb, len(lines), lines, estimate_tokens(text), whole.connect)

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "read_whole": self.whole, "articles": len(self.paths)}


def open_scope(kb: KnowledgeBase, corpus: Corpus, budget_tokens: int) -> Scope:
    """The scope of ``corpus`` now: its articles that are still there, read whole when
    together they fit ``budget_tokens`` (reading stops once they do not)."""
    present, missing = [], []
    for path in corpus.articles:
        (present if (kb.root / path).is_file() else missing).append(path)
    pages: list[Page] = []
    used = 0
    for path in present:
        if used > budget_tokens:
            break
        article = read_article(kb, path)
        body = article.body.strip()
        used += estimate_tokens(body) + estimate_tokens(article.title) + 12
        pages.append(Page(path, article.title, body, False))
    whole = used <= budget_tokens and len(pages) == len(present)
    return Scope(
        corpus.name,
        corpus.description,
        tuple(present),
        tuple(missing),
        tuple(pages) if whole else (),
        whole,
        budget_tokens,
    )
