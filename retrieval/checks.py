"""Checks of an answer against the pages it was written from, before a user reads it.

Each sentence of the answer (see chunks.py) is checked as it is released:

- grounding: every number, date, name and identifier it states must be in the pages
  read (kb_ai.grounding finds them and knows "1,000" is 1000 and "thirty" is 30). A
  sentence that states one the pages do not is left out, with a finding;
- terms: a sentence that shares no meaningful term with the pages read is left out
  (an answer of one word, "Ulaanbaatar", states no checkable name: it opens a sentence);
- answering: a sentence of more than SHORT_ANSWER_TERMS terms that holds none of the
  question's content terms and goes on from no sentence kept before it is left out: it
  is about something else (padding from another page);
- citations: a cited page must contain the claim's key terms (at least half of its
  meaningful terms, and, when it is the only page cited, its names and numbers too).
  A citation that fails is removed; when another page read does contain the claim, the
  sentence cites that page instead, and when none does, the sentence is left out.

What is left out is said at the end of the answer, in plain words; when nothing of the
answer is left, the answer is that the wiki does not cover the question. The findings
say what was removed and why (``kb-ai ask --json``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from kb_ai.grounding import Claim, Evidence, extract_claims, normalise, stated_verbatim
from retrieval.pages import Citation, Page, outside_code, validate_citations
from retrieval.terms import content_terms, held, terms
from wiki import normalise_article_path
from wiki.words import CJK_RUN

NOT_COVERED = "The wiki does not cover this question."
LEFT_OUT = (
    "Part of the model's answer was left out: the wiki pages read do not say it (see the findings)."
)
_LINK = re.compile(r"\[([^\]\n]{1,300})\]\(([^)\s]{1,300})\)")
_NOT_COVERED = re.compile(
    r"(does not|doesn't|do not|don't) (cover|contain|mention|say|include|state|specify)|"
    r"not covered|no information|not (?:in|mentioned in) the (?:wiki|pages)|"
    r"没有|未涉及|不包含|未提及|記載がありません",
    re.I,
)
SHORT_ANSWER_TERMS = 3  # a sentence of at most this many terms may be the bare answer
_WORDY = re.compile(r"[^\W_]", re.UNICODE)


def says_not_covered(text: str) -> bool:
    """Whether ``text`` declines: says the wiki (or the pages) do not cover it."""
    return bool(_NOT_COVERED.search(text[:400]))


@dataclass(frozen=True)
class Finding:
    """Something the checks removed or changed, and why."""

    check: str  # "grounding" | "citation" | "selection" | "coverage"
    detail: str
    claim: str = ""
    path: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"check": self.check, "detail": self.detail, "claim": self.claim, "path": self.path}


def _material(page: Page) -> str:
    """What a page read says: its title, its date (retrieval/dated.py: an answer may say
    "as of" it) and its text."""
    return f"{page.title}\n{page.date}\n{page.text}" if page.date else f"{page.title}\n{page.text}"


def _plain(text: str) -> str:
    """The claim a sentence makes: its words without the citation links."""
    return " ".join(_LINK.sub(lambda m: "" if "/" in m.group(2) else m.group(1), text).split())


class AnswerCheck:
    """Checks one answer, sentence by sentence, against the pages read for it."""

    def __init__(
        self,
        pages: list[Page],
        question: str,
        asked: str | None = None,
        *,
        cite_uncited: bool = False,
    ) -> None:
        self.pages = pages
        self.question = question
        # a written answer's sentence that cites nothing is given the page read that
        # states it (a small model's quotes are cited a run at a time by extractive.py)
        self.cite_uncited = cite_uncited
        # lower-cased pages: a claim written as the pages write it needs no index of them
        self.lowered = [normalise(_material(p)).lower() for p in pages]
        self.page_terms = {p.path: terms(_material(p)) for p in pages}
        self.all_terms = set().union(*self.page_terms.values())
        self.by_path = {p.path: p for p in pages}
        self.read = {p.path.removeprefix("wiki/") for p in pages}
        self._page_evidence: dict[str, Evidence] = {}
        self.citations: list[Citation] = []
        self.findings: list[Finding] = []
        self.parts: list[str] = []  # what was shown
        self.pending = ""  # held until a sentence that says something is shown
        self.kept = 0  # sentences that state something and passed
        self.left_out = 0
        self.declined = False
        self.text = ""  # the checked answer, once finished
        # the question's terms, with its search terms in the pages' language (if another)
        self.asked_terms = frozenset(content_terms(asked or question))
        self.said_terms: set[str] = set()  # of the sentences kept so far

    def _answers(self, key: set[str]) -> bool:
        """Whether a sentence with terms ``key`` answers the question: it holds one of
        the question's content terms, or goes on from a sentence kept before it (a term
        in common: the second hop of "directed by A. A was born in ..."). A sentence
        about something else (padding from another page) does not."""
        if not self.asked_terms or len(key) <= SHORT_ANSWER_TERMS:
            return True  # "Boston.": an answer need not repeat the question
        if any(CJK_RUN.match(t) for t in key):
            return True  # Chinese and Japanese bigrams rarely repeat a question's
        return bool(held(self.asked_terms, key)) or not key.isdisjoint(self.said_terms)

    @cached_property
    def evidence(self) -> Evidence:
        """The pages' claims in every spelling ("thirty" for 30, "2 March 2026" in
        2026-03): built the first time a sentence states a claim not written in them as
        it stands (most answers quote their pages' claims as they are)."""
        return Evidence(*(_material(p) for p in self.pages))

    @cached_property
    def question_evidence(self) -> Evidence:
        """The pages and the question: what a sentence that declines may repeat. Built
        when a sentence first declines (most answers never do; it costs as much as
        ``evidence``)."""
        return Evidence(self.question, *(_material(p) for p in self.pages))

    def _unsupported(self, claim: str, declines: bool) -> list[Claim]:
        """The claims of ``claim`` the pages (and, for a sentence that declines, the
        question) do not state."""
        claims = [c for c in extract_claims(claim) if not stated_verbatim(c.text, self.lowered)]
        if not claims:
            return []
        return _missing(self.question_evidence if declines else self.evidence, claims)

    def check(self, sentence: str) -> str:
        """The sentence as the user may read it ("" when it is left out)."""
        body = sentence.strip()
        lead = sentence[: len(sentence) - len(sentence.lstrip())]
        trail = sentence[len(sentence.rstrip()) :]
        if not body:
            return self._hold(sentence)
        text, cited = validate_citations(body, self.pages)
        claim = _plain(text)
        if not _WORDY.search(claim):  # only citations, or punctuation
            self._cite(cited)
            return self._hold(lead + text + trail if cited else trail)
        declines = says_not_covered(claim)
        self.declined |= declines
        missing = self._unsupported(claim, declines)
        if missing:
            listed = ", ".join(f"{c.kind} {c.text!r}" for c in missing[:5])
            return self._leave_out(claim, f"the pages read do not state {listed}")
        key = terms(claim)
        if not declines and not key:  # "OK.", "Yes:": shown with what follows, if anything
            return self._hold(lead + text + trail)
        if not declines and key.isdisjoint(self.all_terms):
            return self._leave_out(claim, "it shares no meaningful term with the pages read")
        if not declines and not self._answers(key):
            return self._leave_out(claim, "it does not answer the question (none of its terms)")
        if not declines:
            asked = {m.group(2) for m in _LINK.finditer(body) if "/" in m.group(2)}
            for target in sorted(asked - {c.path for c in cited}):
                if normalise_article_path(target).removeprefix("wiki/") not in self.read:
                    self.findings.append(
                        Finding(
                            "citation", "citation removed: that page was not read", claim, target
                        )
                    )
            text, cited = self._check_citations(text, claim, cited, recite=bool(asked))
            if asked and not cited:
                return self._leave_out(claim, "no page read contains what it cites them for")
            if not cited and self.cite_uncited and len(key) > SHORT_ANSWER_TERMS:
                text, cited = self._cite_best(text, claim)
            self.kept += 1
            self.said_terms |= key
        self._cite(cited)
        shown, self.pending = self.pending + lead + text + trail, ""
        self.parts.append(shown)
        return shown

    def _hold(self, text: str) -> str:
        self.pending += text
        return ""

    def _leave_out(self, claim: str, why: str) -> str:
        self.findings.append(Finding("grounding", f"left out: {why}", claim))
        self.left_out += 1
        return ""

    def supports(self, path: str, claim: str, *, alone: bool) -> bool:
        """Whether the page at ``path`` contains the key terms of ``claim``."""
        key = terms(claim)
        have = self.page_terms.get(path, set())
        if key and len(key & have) * 2 < len(key):
            return False
        if alone:
            if path not in self._page_evidence:
                page = self.by_path[path]
                self._page_evidence[path] = Evidence(page.title, page.date, page.text)
            return not _unsupported(self._page_evidence[path], claim)
        return True

    def _check_citations(
        self, text: str, claim: str, cited: list[Citation], *, recite: bool
    ) -> tuple[str, list[Citation]]:
        """Remove the citations of pages that do not contain the claim; when the model
        cited something and nothing is left, cite the page read that does."""
        good = [c for c in cited if self.supports(c.path, claim, alone=len(cited) == 1)]
        for c in cited:
            if c not in good:
                text = _LINK.sub(lambda m, p=c.path: "" if m.group(2) == p else m.group(0), text)
                self.findings.append(
                    Finding(
                        "citation",
                        "citation removed: the cited page does not contain the claim's key terms",
                        claim,
                        c.path,
                    )
                )
        if good or not recite:
            return _tidy(text), good
        best = self._best_page(claim)
        if best is None:
            return _tidy(text), []
        self.findings.append(
            Finding(
                "citation", f"cited {best.path} instead, which contains the claim", claim, best.path
            )
        )
        link = f" [{best.title}]({best.path})"
        text = _tidy(text)
        m = re.search(r"[.!?。！？]$", text)
        text = text[: m.start()] + link + m.group(0) if m else text + link
        return text, [Citation(best.title, best.path)]

    def _cite_best(self, text: str, claim: str) -> tuple[str, list[Citation]]:
        """``text`` citing the page read that states ``claim`` (before its stop), so a
        reader can check it too; as it was when no page read states all of it."""
        best = self._best_page(claim)
        if best is None:
            return text, []
        link = f" [{best.title}]({best.path})"
        m = re.search(r"[.!?。！？]$", text)
        return (text[: m.start()] + link + m.group(0) if m else text + link), [
            Citation(best.title, best.path)
        ]

    def _best_page(self, claim: str) -> Page | None:
        key = terms(claim)
        ranked = sorted(self.pages, key=lambda p: -len(key & self.page_terms[p.path]))
        return next((p for p in ranked if self.supports(p.path, claim, alone=True)), None)

    def _cite(self, cited: list[Citation]) -> None:
        for c in cited:
            if all(c.path != have.path for have in self.citations):
                self.citations.append(c)

    def finish(self) -> str:
        """End the answer: returns what to show after the sentences already shown (a
        plain word on what was left out, or the whole answer when nothing is left)."""
        if self.kept == 0 and not self.declined:
            self.citations = []
            self.text = NOT_COVERED
            return NOT_COVERED
        tail = self.pending.rstrip()
        if self.left_out and self.kept:
            tail += f"\n\n{LEFT_OUT}"
        self.parts.append(tail)
        self.text = "".join(self.parts).strip()
        return tail

    @property
    def covered(self) -> bool:
        return self.kept > 0 and (bool(self.citations) or not self.declined)


def _unsupported(evidence: Evidence, claim: str) -> list[Claim]:
    """The claims of ``claim`` the evidence does not state."""
    return _missing(evidence, extract_claims(claim))


def _missing(evidence: Evidence, claims: list[Claim]) -> list[Claim]:
    """Of ``claims``, those the evidence does not state. A name may be a short form of a
    word the pages use ("Postgres" for PostgreSQL): answers abbreviate, articles less."""
    return [
        c
        for c in claims
        if not evidence.supports(c)
        and (c.kind != "name" or not all(_abbreviates(w, evidence.words) for w in c.value.split()))
    ]


def _abbreviates(word: str, words: set[str]) -> bool:
    return len(word) >= 5 and any(w.startswith(word) for w in words)


def _tidy(text: str) -> str:
    """A sentence with the gaps of removed citations closed, its code spans as written
    (`SELECT ... FOR UPDATE` was quoted `SELECT... FOR UPDATE`, and left out as stating
    an identifier no page read has)."""
    return outside_code(text, _gaps).strip()


def _gaps(text: str) -> str:
    text = re.sub(r"[ \t]+([.,;:。，])(?!\.)", r"\1", text)  # not before an ellipsis
    text = re.sub(r"\(\s*\)|\[\s*\]", "", text)
    return re.sub(r"[ \t]{2,}", " ", text)
