"""Ask: question -> (standalone question) -> candidates -> selected pages -> read whole
-> (bounded follow-ups: search terms learned from the pages, linked pages) -> answer,
checked sentence by sentence against the pages read.

`Asker.events` yields what a user interface shows as it happens (Status, Note, Delta)
and ends with one Done event carrying the Answer, or an Error event. `ask` runs it to
the end. No step ever answers without context silently: a failed selection is an
error the user sees, and a question the pages do not cover is answered as such: without
a model call when no candidate page shares a meaningful term with the question (see
terms.py); without an answer call when the pages read hold too little of the question's
own terms (coverage.py: the answer names nearby pages as "see also"), or when the
model, asked, judges that none of the best sentences read answers it (judge.py); and after the
answer's checks (checks.py) when nothing the model said is in the pages read.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing, closing

from kb_ai.errors import KbAiError, LLMOutputError, UsageError
from kb_ai.llm import LLM, Completion
from kb_ai.settings import Settings
from retrieval import extractive
from retrieval.answer import Answer, AskEvent, Delta, Done, Error, Note, Status, Turn
from retrieval.candidates import Catalog
from retrieval.checks import LEFT_OUT, NOT_COVERED, AnswerCheck, Finding
from retrieval.chunks import SentenceCutter
from retrieval.coverage import measure, not_covered
from retrieval.follow import Hop
from retrieval.judge import judge
from retrieval.pages import Page, check_paths
from retrieval.picking import PROMPTS, PagePicker
from retrieval.places import Placer
from retrieval.rewrite import standalone_question
from retrieval.sources import source_passages
from wiki import KnowledgeBase, compile_under_way

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


class Asker(PagePicker):
    """Answers questions from one knowledge base with one LLM client (the pages picked
    as picking.py picks them)."""

    async def events(
        self, question: str, *, history: Sequence[Turn] = (), paths: Sequence[str] | None = None
    ) -> AsyncIterator[AskEvent]:
        try:
            async with aclosing(self._events(question, history, paths)) as events:
                async for event in events:
                    if isinstance(event, Done) and self.scope is not None:
                        event.answer.corpus = self.scope.as_dict()
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
        scope = self.scope
        if scope is not None:
            if not scope.paths:
                raise EmptyWikiError(
                    f"Corpus {scope.name} has no article left in the wiki",
                    hint=f"kb-ai corpus rebuild {scope.name}",
                )
            yield Note(scope.note())
            self.indexed = len(catalog)
            catalog = await asyncio.to_thread(scope.catalog, catalog)
        whole = scope is not None and scope.whole and not paths
        if paths:
            chosen = check_paths(self.kb, list(paths))
            standalone = question
        elif whole:  # the corpus read whole: no selection, the same pages every question
            standalone = question
            if history:
                yield Status("rewriting")
                standalone = await standalone_question(
                    self.llm, PROMPTS, question, history, self._paid
                )
            chosen = list(scope.paths)
        else:
            if not len(catalog) and not self.shelves:  # a first compile: it is on its way
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
        pages = list(scope.pages) if whole else await asyncio.to_thread(self._read, chosen)
        searched = " ".join([standalone, *self.crossing])
        hops = [Hop(searched, list(chosen), "paths" if paths or whole else "search")]
        # Follow-ups: what the pages name that the answer needs next, within one budget
        # of pages for the whole question.
        room = self.settings.select_k + self.settings.second_hop_pages - len(pages)
        for _ in range(0 if paths or whole else self.settings.max_hops):
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
        # not theirs; nor over a corpus read whole, asked across its records in words of
        # its own, "what recurs": the answer's checks still apply.)
        coverage = await asyncio.to_thread(measure, standalone, pages)
        gate = not self.crossing and not whole
        threshold = self.settings.coverage_threshold
        if gate and not coverage.covered(threshold):
            # a thin article: what its own source says may answer (sources.py)
            passages = await asyncio.to_thread(source_passages, self.kb, pages, standalone)
            again = await asyncio.to_thread(measure, standalone, pages + passages)
            if passages and again.covered(threshold):
                yield Status("reading", paths=[p.path for p in passages])
                pages += passages
                hops.append(Hop(standalone, [p.path for p in passages], "sources"))
                coverage = again
        if gate and not coverage.covered(threshold):
            answer = not_covered(coverage, pages, self.usage, standalone, hops, self.findings)
            yield Delta(answer.answer)
            yield Done(answer)
            return
        # Past the evidence check, the model judges whether one of the few best sentences
        # answers (judge.py); no usable verdict leaves the evidence check's decision.
        if gate and threshold > 0 and self.settings.judges_coverage:
            yield Status("judging")
            verdict = await judge(self.llm, PROMPTS, standalone, pages, self._paid)
            if verdict.answers is False:
                answer = not_covered(
                    coverage, pages, self.usage, standalone, hops, self.findings, verdict.finding
                )
                yield Delta(answer.answer)
                yield Done(answer)
                return
            if verdict.answers is None:
                self.findings.append(verdict.finding)
        # Each sentence is checked against the pages before it is shown (checks.py).
        check = AnswerCheck(
            pages, standalone, searched, cite_uncited=not self.settings.answers_extractively
        )
        placer = Placer(pages)  # each citation pointed at the lines it stands for (places.py)
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
                    yield Delta(placer.feed(shown))
        else:
            yield Status("answering")
            messages = PROMPTS.render(
                "answer",
                pages=pages,
                question=standalone,
                history=[t.__dict__ for t in history[-6:]],
                crossing=bool(self.crossing),
                corpus=scope if whole else None,
            )
            # closed here, in this task, when the asker goes away mid-answer (else the
            # loop's finaliser closes it later, in a task of its own)
            async with aclosing(self.llm.stream(messages, stage="answer")) as stream:
                async for item in stream:
                    if isinstance(item, Completion):
                        final = self._paid(item)
                        continue
                    said.append(item)
                    for sentence in cutter.feed(item):
                        if shown := check.check(sentence):
                            yield Delta(placer.feed(shown))
            if not said and final is not None and final.text:
                said.append(final.text)
                cutter.feed(final.text)
            for sentence in cutter.flush() if said else []:
                if shown := check.check(sentence):
                    yield Delta(placer.feed(shown))
        if not "".join(said).strip():
            if final is not None:
                final.reject()
            raise LLMOutputError("the model returned an empty answer")
        if tail := check.finish():
            yield Delta(placer.feed(tail))
        placer.finish(LEFT_OUT, NOT_COVERED)
        answer = Answer(
            placer.text,  # check.text with its citations' places
            check.citations,
            [p.path for p in pages],
            self.usage,
            standalone,
            check.covered,
            hops=hops,
            findings=self.findings + check.findings,
            claims=placer.claims,
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
                        if not quoter.adds(s):  # padding: the sentences before say it
                            why = "left out: it adds nothing the question asks to the quotes before it"
                            self.findings.append(Finding("answering", why, s.text, s.path))
                            continue
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
