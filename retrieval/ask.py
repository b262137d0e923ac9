"""Ask: question -> (standalone question) -> candidates -> selected pages -> read whole
-> (bounded follow-ups: search terms learned from the pages, linked pages) -> answer,
checked sentence by sentence against the pages read.

`Asker.events` yields what a user interface shows as it happens (Status, Note, Delta)
and ends with one Done event carrying the Answer, or an Error event. `ask` runs it to
the end. No step ever answers without context silently: a failed selection is an
error the user sees, and a question the pages do not cover is answered as such: without
a model call when no candidate page shares a meaningful term with the question (see
terms.py); without an answer call when the pages read hold too little of the question's
own terms (coverage.py: the answer names nearby pages as "see also"); and after the
answer's checks (checks.py) when nothing the model said is in the pages read.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing, closing
from functools import partial
from pathlib import Path

from kb_ai.errors import KbAiError, LLMError, LLMOutputError, UsageError
from kb_ai.llm import LLM, Completion, Usage
from kb_ai.prompts import PromptLibrary
from kb_ai.settings import Settings
from retrieval import extractive, selection
from retrieval.answer import Answer, AskEvent, Delta, Done, Error, Note, Status, Turn
from retrieval.candidates import Catalog, estimate_tokens, pick_candidates
from retrieval.checks import NOT_COVERED, AnswerCheck, Finding
from retrieval.chunks import SentenceCutter
from retrieval.connection import SharedConnection
from retrieval.coverage import measure, not_covered
from retrieval.follow import Hop, follow_schema, pages_hold_every_term, parse_follow_up
from retrieval.languages import TERMS_SCHEMA, parse_terms, terms_prompt
from retrieval.pages import Page, check_paths, link_targets, read_page
from retrieval.rewrite import standalone_question
from retrieval.terms import shares_a_term, terms
from wiki import KnowledgeBase, compile_under_way
from wiki.feedback import search_with_feedback

PROMPTS = PromptLibrary(Path(__file__).parent / "prompts")
MAX_QUESTION_CHARS = 4_000


class EmptyWikiError(UsageError):
    """The knowledge base has no articles to answer from."""


def check_question(question: object) -> str:
    """The question with its whitespace collapsed; UsageError when it is not text, is
    empty, or is over MAX_QUESTION_CHARS. Every edge checks a question with this."""
    if not isinstance(question, str) or not (text := " ".join(question.split())):
        raise UsageError("The question is empty", hint='ask something, e.g. "Why did we move DNS?"')
    if len(text) > MAX_QUESTION_CHARS:
        raise UsageError(
            f"The question is over {MAX_QUESTION_CHARS:,} characters", hint="shorten it"
        )
    return text


class Asker:
    """Answers questions from one knowledge base with one LLM client."""

    def __init__(self, kb: KnowledgeBase, settings: Settings, llm: LLM) -> None:
        self.kb = kb
        self.settings = settings
        self.llm = llm
        self.usage = Usage()
        self.findings: list[Finding] = []  # of the question being answered
        self.crossing: list[str] = []  # its search terms in the catalog's language, if other
        self.state = SharedConnection(kb)  # state.db for the question, closed at its end

    def _paid(self, reply: Completion) -> Completion:
        self.usage = self.usage + reply.usage
        return reply

    async def events(
        self, question: str, *, history: Sequence[Turn] = (), paths: Sequence[str] | None = None
    ) -> AsyncIterator[AskEvent]:
        try:
            async with aclosing(self._events(question, history, paths)) as events:
                async for event in events:
                    yield event
        except KbAiError as exc:
            yield Error(exc, self.usage)
        finally:
            self.state.close()

    async def _events(
        self, question: str, history: Sequence[Turn], paths: Sequence[str] | None
    ) -> AsyncIterator[AskEvent]:
        question = check_question(question)
        self.findings, self.crossing = [], []
        note = await asyncio.to_thread(self._compile_note)
        if note:
            yield Note(note)
        # Disk and SQLite work runs in threads: in `kb-ai serve` one event loop streams
        # every user's answer, and must not wait on another user's search.
        catalog = await asyncio.to_thread(
            Catalog.load, self.kb, self.settings.selection_budget_tokens, self.state.use
        )
        if paths:
            chosen = check_paths(self.kb, list(paths))
            standalone = question
        else:
            if not len(catalog):  # during a first compile: say it is on its way
                first = "a compile is running: ask again once it is done (see Status)"
                hint = first if note else "compile some notes first: kb-ai compile <paths>"
                raise EmptyWikiError("The wiki has no articles yet", hint=hint)
            standalone = question
            if history:
                yield Status("rewriting")
                standalone = await standalone_question(
                    self.llm, PROMPTS, question, history, self._paid
                )
            yield Status("selecting")
            self.crossing = await self._catalog_terms(standalone, catalog)
            chosen, shortlisted = await self._select(standalone, catalog)
            if not chosen:
                answer = Answer(
                    NOT_COVERED,
                    usage=self.usage,
                    question=standalone,
                    covered=False,
                    shortlisted=shortlisted,
                    findings=self.findings,
                )
                yield Delta(answer.answer)
                yield Done(answer)
                return
        yield Status("reading", paths=list(chosen))
        pages = await asyncio.to_thread(self._read, chosen)
        searched = " ".join([standalone, *self.crossing])
        hops = [Hop(searched, list(chosen), "paths" if paths else "search")]
        # Follow-ups: what the pages name that the answer needs next, within one budget
        # of pages for the whole question.
        room = self.settings.select_k + self.settings.second_hop_pages - len(pages)
        for _ in range(0 if paths else self.settings.max_hops):
            hop = await self._follow_up(standalone, pages, catalog, room)
            if hop is None:
                break
            yield Status("reading", paths=list(hop.pages), query=hop.query)
            pages += await asyncio.to_thread(self._read, hop.pages)
            hops.append(hop)
            room -= len(hop.pages)
        # Covered only when the pages read hold sentences that answer the question
        # (coverage.py): otherwise no answer is written, and the nearest pages are named.
        # (Not across scripts: a question's words in another script than the pages are
        # not theirs; the answer's checks still apply.)
        coverage = await asyncio.to_thread(measure, standalone, pages)
        if not self.crossing and not coverage.covered(self.settings.coverage_threshold):
            answer = not_covered(coverage, pages, self.usage, standalone, hops, self.findings)
            yield Delta(answer.answer)
            yield Done(answer)
            return
        # Each sentence is checked against the pages before it is shown (checks.py).
        check = AnswerCheck(pages, standalone, searched)
        cutter = SentenceCutter()
        said: list[str] = []
        final: Completion | None = None
        if self.settings.answers_extractively:
            # A small model picks sentences of the pages; kb-ai quotes each verbatim as
            # soon as its id is written, through the same checks as any answer.
            async for item in self._quote(standalone, pages, history):
                if not isinstance(item, str):
                    yield item
                    continue
                said.append(item)
                if shown := check.check(item):
                    yield Delta(shown)
        else:
            yield Status("answering")
            messages = PROMPTS.render(
                "answer",
                pages=pages,
                question=standalone,
                history=[t.__dict__ for t in history[-6:]],
                crossing=bool(self.crossing),
            )
            async for item in self.llm.stream(messages, stage="answer"):
                if isinstance(item, Completion):
                    final = self._paid(item)
                    continue
                said.append(item)
                for sentence in cutter.feed(item):
                    if shown := check.check(sentence):
                        yield Delta(shown)
            if not said and final is not None and final.text:
                said.append(final.text)
                cutter.feed(final.text)
            for sentence in cutter.flush() if said else []:
                if shown := check.check(sentence):
                    yield Delta(shown)
        if not "".join(said).strip():
            if final is not None:
                final.reject()
            raise LLMOutputError("the model returned an empty answer")
        if tail := check.finish():
            yield Delta(tail)
        answer = Answer(
            check.text,
            check.citations,
            [p.path for p in pages],
            self.usage,
            standalone,
            check.covered,
            hops=hops,
            findings=self.findings + check.findings,
        )
        if final is not None:
            final.accept()  # after the last check of the answer
        yield Done(answer)

    async def _quote(
        self, question: str, pages: list[Page], history: Sequence[Turn]
    ) -> AsyncIterator[str | Status]:
        """The extractive answer in pieces, as the model names sentence ids under a
        grammar (an enum of the numbered sentences of the pages read): each sentence once
        its id is complete in the streamed reply, its page's citation once its run ends."""
        numbered = extractive.number_sentences(pages, " ".join([question, *self.crossing]))
        quoter = extractive.Quoter(question)
        if numbered:
            offered = sum(len(p.sentences) for p in numbered)
            yield Status("choosing", sentences=offered)
            messages = PROMPTS.render(
                "pick",
                pages=numbered,
                question=question,
                history=[t.__dict__ for t in history[-6:]],
                max_picks=extractive.MAX_PICKS,
            )
            partial = extractive.PartialPicks(numbered)
            schema = extractive.pick_schema(numbered)
            reply = self.llm.stream(messages, stage="answer", schema=schema, schema_name="pick")
            async with aclosing(reply) as items:
                async for item in items:
                    if isinstance(item, Completion):
                        self._paid(item).accept()  # ids not offered are dropped; rest quoted
                        picks = partial.finish(item.data)
                    else:
                        picks = partial.feed(item)
                    for s in picks:
                        for piece in quoter.add(s):
                            yield piece
        for piece in quoter.end():
            yield piece

    def _compile_note(self) -> str | None:
        """What to tell the reader when a compile is changing the wiki under the answer."""
        with self.state.use() as conn:
            run = compile_under_way(conn)
        if run is None:
            return None
        where = f"{run['stage']} {run['done']}/{run['total']}" if run["total"] else run["stage"]
        return (
            f"A compile is changing the wiki right now ({where}): this answer comes from "
            "the wiki as it is before that compile ends; ask again once it is done."
        )

    def _read(self, paths: Sequence[str]) -> list[Page]:
        return [read_page(self.kb, p, self.settings.read_chars) for p in paths]

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
        cands = pick_candidates(
            catalog,
            " ".join([question, *search_terms]),
            budget,
            lambda q, limit: self._search(q, limit, len(catalog), feedback),
            exclude=exclude,
        )
        messages = PROMPTS.render(
            "select",
            lines=cands.lines,
            question=question,
            k=self.settings.select_k,
            shortlisted=cands.shortlisted,
            total=cands.total,
            search_terms=search_terms,
        )
        return messages, cands.paths, cands.shortlisted

    def _search(self, question: str, limit: int, articles: int, feedback: bool = True) -> list[str]:
        with self.state.use():
            # the question, then with the names its best hit mentions (wiki/feedback.py)
            index = self.state.search_index(articles)
            if feedback:
                return search_with_feedback(index, question, limit)
            return [hit.path for hit in index.search(question, limit=limit)]

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
            return self.state.search_index(articles).known(offered)

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


async def ask(
    kb: KnowledgeBase,
    settings: Settings,
    llm: LLM,
    question: str,
    *,
    history: Sequence[Turn] = (),
    paths: Sequence[str] | None = None,
) -> Answer:
    """Answer one question; raises the KbAiError an `error` event would carry."""
    asker = Asker(kb, settings, llm)
    with closing(asker.state):
        async with aclosing(asker._events(question, history, paths)) as events:
            async for event in events:
                if isinstance(event, Done):
                    return event.answer
    raise LLMOutputError("the answer ended without a result")
