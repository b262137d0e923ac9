"""The coverage judge: after the evidence check (coverage.py) lets a question through,
the model is asked whether one of the few best sentences read answers it.

A lexical test cannot tell a sentence that answers from one about the same names that
states another fact ("Who played Jerry Lee Lewis in Walk the Line?" over a page on a
Jerry Lee Lewis song): distractors written for a question hold its words. So the
``JUDGED`` sentences an answer would quote first (extractive.number_sentences: those
holding the question's rarest words) are numbered and shown to the model with the
question, and it replies under a grammar: ``answer``, the answer in a few words copied
from the sentence that states it (at most ``ANSWER_CHARS``), or "none"; ``sentence``, its
number (an enum of the numbers shown, and "none").

The reply answers the question only when it names a sentence and an answer that is
written in the sentences shown and is more than the question's own words (a choice, "A
or B?", may answer with what it names). Otherwise the question is not covered: the
answer says so and names the nearby pages, claiming nothing (coverage.not_covered).

The same call serves every model size, before the answer is written: a small model then
picks sentences, a larger one writes, and the answer's checks (checks.py) still apply to
what it says. A judge that times out, fails or replies with something unusable decides
nothing: the evidence check's decision stands, with a finding saying so.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kb_ai.errors import LLMError
from kb_ai.grounding import normalise
from kb_ai.llm import LLM, Completion
from kb_ai.prompts import PromptLibrary
from retrieval.asked import asks_choice
from retrieval.checks import Finding
from retrieval.extractive import Sentence, number_sentences
from retrieval.pages import Page
from retrieval.terms import held, terms

JUDGED = 4  # sentences shown to the judge (chosen on bench/ask/coverage.py --judge, dev)
ANSWER_CHARS = 80
MAX_SHOWN_CHARS = 400  # of each sentence shown: the prompt stays a few hundred tokens
_NONE = re.compile(r"^\W*(none|n/a|null|unknown|not stated|无|没有)?\W*$", re.I)
_YES_NO = re.compile(r"^\W*(yes|no)\b", re.I)


@dataclass(frozen=True)
class Verdict:
    """What the judge decided: ``answers`` True (a sentence answers), False (none does)
    or None (no usable verdict: the evidence check's decision stands)."""

    answers: bool | None
    detail: str  # for the finding, in plain words
    sentence: str = ""  # the sentence number the model named ("none", "" if no reply)
    answer: str = ""  # the short answer it gave
    shown: int = 0  # sentences shown

    @property
    def finding(self) -> Finding:
        return Finding("coverage", self.detail)


def candidates(question: str, pages: Sequence[Page], k: int | None = None) -> list[Sentence]:
    """The ``k`` (JUDGED) sentences an answer would quote first (see the module)."""
    k = k or JUDGED
    return [s for p in number_sentences(pages, question, limit=k) for s in p.sentences][:k]


def judge_schema(n: int) -> dict:
    return {
        "type": "object",
        "properties": {
            "answer": {"type": "string", "maxLength": ANSWER_CHARS},
            "sentence": {"type": "string", "enum": [*map(str, range(1, n + 1)), "none"]},
        },
        "required": ["answer", "sentence"],
        "additionalProperties": False,
    }


def judge_messages(prompts: PromptLibrary, question: str, shown: Sequence[Sentence]) -> list[dict]:
    sentences = [
        {"n": i, "title": s.title, "text": s.shown[:MAX_SHOWN_CHARS]}
        for i, s in enumerate(shown, 1)
    ]
    return prompts.render("judge", question=question, sentences=sentences)


def _written(answer: str, texts: Sequence[str]) -> bool:
    """Whether ``answer`` is written in one of ``texts`` (case, spacing and number forms
    aside), or all its terms are held by one of them (a name copied a little otherwise)."""
    want = " ".join(normalise(answer).casefold().split())
    if not want:
        return False
    if any(want in " ".join(normalise(t).casefold().split()) for t in texts):
        return True
    key = terms(answer)
    return bool(key) and any(len(held(frozenset(key), terms(t))) == len(key) for t in texts)


def read_verdict(data: object, question: str, shown: Sequence[Sentence]) -> Verdict:
    """The verdict a reply gives (see the module)."""
    n = len(shown)
    if not isinstance(data, dict) or not isinstance(data.get("sentence"), str | int):
        return Verdict(None, _unusable("its reply names no sentence"), shown=n)
    sentence = str(data["sentence"]).strip().lower()
    answer = str(data.get("answer") or "").strip()[:ANSWER_CHARS]
    said = f'sentence {sentence}, answer "{answer}"'
    if sentence == "none" or _NONE.match(answer):
        return Verdict(
            False,
            f"not covered: the model judged that none of the {n} best sentences of the pages "
            f"read answers the question ({said}), so no answer was written",
            sentence,
            answer,
            n,
        )
    if sentence not in {str(i) for i in range(1, n + 1)}:
        why = _unusable(f"it named sentence {sentence!r} of {n}")
        return Verdict(None, why, sentence, answer, n)
    texts = [s.shown for s in shown]
    if _YES_NO.match(answer):  # "Is X still used?" "No": the sentence named says it
        why = ""
    elif not _written(answer, texts):
        why = "its answer is written in none of them"
    elif not asks_choice(question) and not terms(answer) - terms(question):
        why = "its answer only repeats the question's words"
    else:
        why = ""
    if not why:
        said = f"the model judged that sentence {sentence} answers ({said})"
        return Verdict(True, said, sentence, answer, n)
    return Verdict(
        False,
        f"not covered: the model named a sentence of the {n} best ones read but {why} "
        f"({said}), so no answer was written",
        sentence,
        answer,
        n,
    )


def _unusable(why: str) -> str:
    return (
        f"the coverage judge gave no usable verdict ({why}): the evidence check's decision "
        "(covered) stands"
    )


async def judge(
    llm: LLM,
    prompts: PromptLibrary,
    question: str,
    pages: Sequence[Page],
    paid: Callable[[Completion], Completion],
) -> Verdict:
    """Ask the model whether a sentence of ``pages`` answers ``question`` (one call; none
    when no sentence read shares a word with it). ``paid`` counts the call's usage."""
    shown = candidates(question, pages)
    if not shown:
        return Verdict(None, _unusable("no sentence read shares a word with the question"))
    messages = judge_messages(prompts, question, shown)
    try:
        reply = paid(
            await llm.complete(messages, stage="judge", schema=judge_schema(len(shown)),
                               schema_name="judge")
        )  # fmt: skip
    except LLMError as exc:  # timed out, refused, cut off, not JSON: it decides nothing
        return Verdict(None, _unusable(f"{type(exc).__name__}: {exc}"), shown=len(shown))
    verdict = read_verdict(reply.data, question, shown)
    if verdict.answers is None:
        reply.reject()  # not cached: a retry may do better
    else:
        reply.accept()
    return verdict
