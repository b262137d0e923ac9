"""Which pages a question reads: the selection prompt within its budget (this knowledge
base's candidates, then those of the other knowledge bases it consults, see
shelves.py; a corpus's articles only, see scope.py), the model's pick checked, the
pages that share no term with the question left unread, and the bounded follow-ups
(search terms learned from the pages read, pages they link to).

:class:`PagePicker` holds what one question's picking shares (settings, model client,
state.db connection, usage, findings); ask.py's Asker answers from the pages it picks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from functools import partial
from pathlib import Path

from kb_ai.errors import LLMError, LLMOutputError
from kb_ai.llm import LLM, Completion, Usage
from kb_ai.prompts import PromptLibrary
from kb_ai.settings import Settings
from retrieval import selection
from retrieval.candidates import Catalog, estimate_tokens, pick_candidates
from retrieval.checks import Finding
from retrieval.connection import SharedConnection
from retrieval.follow import Hop, follow_schema, pages_hold_every_term, parse_follow_up
from retrieval.languages import TERMS_SCHEMA, parse_terms, terms_prompt
from retrieval.pages import Page, link_targets, read_page
from retrieval.scope import Scope
from retrieval.shelves import Shelf, shelf_lines, shelf_of
from retrieval.terms import shares_a_term, terms
from wiki import KnowledgeBase
from wiki.feedback import search_with_feedback

PROMPTS = PromptLibrary(Path(__file__).parent / "prompts")


class PagePicker:
    """Picks the pages of one question at a time, from one knowledge base (and the
    others it consults) with one LLM client."""

    def __init__(
        self,
        kb: KnowledgeBase,
        settings: Settings,
        llm: LLM,
        scope: Scope | None = None,
        shelves: Sequence[Shelf] = (),
    ) -> None:
        self.kb = kb
        self.settings = settings
        self.llm = llm
        self.scope = scope  # a corpus: answered from its articles only (scope.py)
        self.indexed = 0  # articles of the whole wiki, when the catalog is a corpus's
        self.shelves = list(shelves)  # other knowledge bases consulted too (shelves.py)
        self.usage = Usage()
        self.findings: list[Finding] = []  # of the question being answered
        self.crossing: list[str] = []  # its search terms in the catalog's language, if other
        self.state = SharedConnection(kb)  # state.db for the question, closed at its end

    def _paid(self, reply: Completion) -> Completion:
        self.usage = self.usage + reply.usage
        return reply

    def _read(self, paths: Sequence[str]) -> list[Page]:
        pages = []
        for p in paths:
            shelf = shelf_of(self.shelves, p)
            budget = self.settings.read_chars
            pages.append(read_page(self.kb, p, budget) if shelf is None else shelf.read(p, budget))
        return pages

    def selection_prompt(
        self,
        question: str,
        catalog: Catalog,
        exclude: set[str] | frozenset[str] = frozenset(),
        search_terms: Sequence[str] = (),
        feedback: bool = True,
    ) -> tuple[list[dict], list[str], bool]:
        """The selection messages within the budget, the candidate paths (none of
        ``exclude``), and whether the catalog was shortlisted. ``search_terms`` (in the
        catalog's language) are searched and shown beside the question; ``feedback``
        False: searched once, without the names of the best hit (wiki/feedback.py)."""
        overhead = estimate_tokens(
            "".join(
                m["content"]
                for m in PROMPTS.render(
                    "select",
                    lines=[],
                    question=question,
                    k=self.settings.select_k,
                    shortlisted=True,
                    total=len(catalog),
                    search_terms=search_terms,
                )
            )
        )
        budget = max(self.settings.selection_budget_tokens - overhead - 64, 0)
        # with other knowledge bases, a third of the budget is theirs (what this one
        # leaves unused too)
        cands = pick_candidates(
            catalog,
            " ".join([question, *search_terms]),
            budget - budget // 3 if self.shelves else budget,
            lambda q, limit: self._search(q, limit, len(catalog), feedback),
            exclude=exclude,
        )
        lines, paths = list(cands.lines), list(cands.paths)
        if self.shelves:  # the other knowledge bases' best lines, after this one's
            query = " ".join([question, *search_terms])
            room = budget - sum(estimate_tokens(line) + 1 for line in lines)
            more = shelf_lines(self.shelves, query, room, lines, exclude)
            lines += [line for _, line in more]
            paths += [path for path, _ in more]
        messages = PROMPTS.render(
            "select",
            lines=lines,
            question=question,
            k=self.settings.select_k,
            shortlisted=cands.shortlisted or bool(self.shelves),
            total=cands.total,
            search_terms=search_terms,
        )
        return messages, paths, cands.shortlisted

    def _search(self, question: str, limit: int, articles: int, feedback: bool = True) -> list[str]:
        # inside a corpus: the wiki's hits (more of them), those of the corpus kept
        wide = limit if self.scope is None else max(limit * 4, 1_000)
        with self.state.use():
            # the question, then with the names its best hit mentions (wiki/feedback.py)
            index = self.state.search_index(self.indexed or articles)
            if feedback:
                found = search_with_feedback(index, question, wide)
            else:
                found = [hit.path for hit in index.search(question, limit=wide)]
        return found if self.scope is None else self.scope.within(found)[:limit]

    async def _pick(self, messages: list[dict], offered: list[str], limit: int) -> list[str] | None:
        """Ask the model to pick among ``offered`` paths; None when the reply has no list.

        Spellings are normalised before they are compared, so a real page is never lost
        to a leading slash or a missing .md; anything not offered is dropped."""
        reply = self._paid(
            await self.llm.complete(
                messages,
                stage="select",
                schema=selection.paths_schema(offered, limit),
                schema_name="selection",
            )
        )
        chosen, keep = selection.chosen_paths(reply.data, offered, limit)
        (reply.accept if keep else reply.reject)()  # every path invented: not one to keep
        return chosen

    async def _catalog_terms(self, question: str, catalog: Catalog) -> list[str]:
        """Search terms in the catalog's language(s) for a question written in another
        script (languages.py); [] when the scripts agree or the reply has none usable.
        Only terms whose words the index holds are kept: one no page has finds nothing."""
        messages = await asyncio.to_thread(terms_prompt, question, catalog.sample)
        if messages is None:
            return []
        try:
            reply = self._paid(
                await self.llm.complete(
                    messages, stage="select", schema=TERMS_SCHEMA, schema_name="search_terms"
                )
            )
        except LLMOutputError:
            return []  # unusable: the question is searched as it is
        except LLMError as exc:
            raise selection.selection_failed(exc) from exc
        offered = parse_terms(reply.data)
        kept = await asyncio.to_thread(self._known_terms, offered, len(catalog))
        (reply.accept if kept or not offered else reply.reject)()
        return kept

    def _known_terms(self, offered: list[str], articles: int) -> list[str]:
        with self.state.use():
            return self.state.search_index(self.indexed or articles).known(offered)

    async def _select(self, question: str, catalog: Catalog) -> tuple[list[str], bool]:
        messages, paths, shortlisted = await asyncio.to_thread(
            self.selection_prompt, question, catalog, frozenset(), self.crossing
        )
        wanted = terms(" ".join([question, *self.crossing]))
        if not paths or not await asyncio.to_thread(self._any_shares, wanted, paths, catalog):
            self.findings.append(
                Finding(
                    "coverage",
                    "no page of the wiki shares a meaningful term with the question, "
                    "so no model was asked",
                )
            )
            return [], shortlisted
        try:
            chosen = await self._pick(messages, paths, self.settings.select_k)
        except LLMError as exc:
            raise selection.selection_failed(exc) from exc
        if chosen is None:
            raise selection.SelectionError(
                "Page selection returned no list of paths, so no answer was given"
            )
        texts = await asyncio.to_thread(lambda: {p: self._page_text(p) for p in chosen})
        related = selection.related_pages(texts, wanted, question)
        unread = "page not read: it shares no meaningful term with the question"
        self.findings += [Finding("selection", unread, path=p) for p in chosen if p not in related]
        if self.settings.answers_extractively:  # a small model's pick, and the best match
            search = partial(self._search, articles=len(catalog))
            best = await asyncio.to_thread(
                selection.best_match, search, self._page_text, question, wanted
            )
            related += [p for p in best if p not in related]
        return related, shortlisted

    def _page_text(self, path: str) -> str:
        if (shelf := shelf_of(self.shelves, path)) is not None:
            return shelf.text(path)
        try:
            return self.kb.resolve(path, under="wiki").read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def _any_shares(self, wanted: set[str], paths: list[str], catalog: Catalog) -> bool:
        """Whether any of the candidate pages shares a meaningful term with the question:
        their catalog lines first, then their whole text."""
        if not wanted:
            return False
        lines = catalog.lookup(paths)
        if any(shares_a_term(wanted, line) for line in lines.values()):
            return True
        return any(shares_a_term(wanted, self._page_text(p)) for p in paths)

    async def _follow_up(
        self, question: str, pages: list[Page], catalog: Catalog, room: int
    ) -> Hop | None:
        """The next round of pages the question needs, or None when the pages read are
        enough (or no room is left, or the optional step fails)."""
        n = min(self.settings.second_hop_pages, room)
        if n <= 0:
            return None
        read = {p.path for p in pages}
        linked = [p for p in catalog.resolve(*link_targets(pages)) if p not in read][:20]
        lines = catalog.lookup(linked) if linked else {}
        linked = [p for p in linked if p in lines]
        held = " ".join(self.crossing) or question  # the question's words as the pages write them
        if not linked and pages_hold_every_term(held, (p.text for p in pages)):
            return None  # nothing links on, and every word of the question is answered for
        messages = PROMPTS.render(
            "follow", question=question, pages=pages, lines=[lines[p] for p in linked], n=n
        )
        try:
            reply = self._paid(
                await self.llm.complete(
                    messages,
                    stage="select",
                    schema=follow_schema(linked, n),
                    schema_name="follow_up",
                )
            )
            follow = parse_follow_up(reply.data, linked, n)
            reply.accept()  # malformed counts as "enough": nothing in it can do harm
            if follow.enough:
                return None
            chosen = list(follow.pages)
            query = question
            if follow.terms and len(chosen) < n:
                query = " ".join([question, *self.crossing, *follow.terms])
                chosen += await self._select_more(
                    query, catalog, read | set(chosen), n - len(chosen)
                )
        except LLMError:
            return None  # the first pages are read; a failed optional step does not stop the answer
        if not chosen:
            return None
        return Hop(query, chosen, "search" if follow.terms else "links")

    async def _select_more(
        self, query: str, catalog: Catalog, exclude: set[str], k: int
    ) -> list[str]:
        """Up to ``k`` pages not in ``exclude`` for ``query``, picked by the model. The
        query holds the bridge terms already: searched once (the best hit's names added
        nothing to a perfect reader's bridge search on MuSiQue-50, 0.96 either way at 50,
        docs/benchmarks-multihop.md, and cost a search per follow-up)."""
        messages, offered, _ = await asyncio.to_thread(
            self.selection_prompt, query, catalog, exclude, (), False
        )
        if not offered:
            return []
        return await self._pick(messages, offered, k) or []
