"""Checks of a written article before the wiki takes it in.

A model's article is untrusted input. Before it is accepted:

- shape: Markdown only (simple HTML is converted, other HTML refused; a ``<markdown>``
  wrapper is stripped); no paragraph or sentence repeated; the body ends on a sentence,
  not mid-word or at the reply's size bound;
- grounding: every name, number, date and identifier in the new text is stated by the
  material it was written from or by the article's previous text, and no sentence
  turns around a negation of the material ("needs no persistence" -> "needs it");
- summary: whole sentences within the bound, never cut mid-sentence.

A few ungrounded sentences are removed (and said so in log.md); more, or a shape
problem, and the article is written again once with the findings; what still fails
then is refused: the article is not written and its source is reported failed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kb_ai.errors import LLMOutputError
from kb_ai.grounding import (
    Evidence,
    MarkupError,
    Negations,
    ends_on_sentence,
    find_repetition,
    fit_sentences,
    normalise,
    remove_passages,
    split_paragraphs,
    split_sentences,
    to_markdown,
)

SUMMARY_MAX = 200  # wiki.articles cuts longer ones; a summary must fit whole
#: Share of an article's sentences that may be removed as ungrounded without asking again.
REMOVE_WITHOUT_RETRY = 0.2
#: After the second attempt, an article that would lose more than this share is refused.
REFUSE_ABOVE = 0.5
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


class ArticleRefusedError(LLMOutputError):
    """The model's article failed the checks twice; nothing of it was written."""

    def __init__(self, path: str, problems: Sequence[str]) -> None:
        shown = "; ".join(problems[:3]) + (
            f"; and {len(problems) - 3} more" if len(problems) > 3 else ""
        )
        super().__init__(
            f"the article {path} was refused by kb-ai's checks: {shown}",
            hint="the source is compiled again by the next run; a stronger model "
            "(KB_AI_MODEL) trips these checks less often",
        )
        self.problems = list(problems)


@dataclass
class Review:
    """What the checks found in one reply, and the body as it would be accepted."""

    body: str
    problems: list[str] = field(default_factory=list)  # shape: the reply is unusable as is
    ungrounded: list[str] = field(default_factory=list)  # claims and flips, described
    notes: list[str] = field(default_factory=list)  # what was changed to accept it
    removed: list[str] = field(default_factory=list)  # passages that hold ungrounded claims
    sentences: int = 0

    @property
    def findings(self) -> list[str]:
        """Everything wrong with the reply, for the model's second attempt."""
        return self.problems + self.ungrounded

    @property
    def removed_share(self) -> float:
        return len(self.removed) / max(self.sentences, 1)


def evidence_for(material: Sequence[str], previous: str, title: str) -> Evidence:
    """What an article may state: its material, its previous text, its title."""
    return Evidence(title, previous, *material)


def review_body(
    body: str,
    *,
    evidence: Evidence,
    material: Sequence[str],
    previous: str = "",
    truncated: bool = False,
    bound: int | None = None,
    told: str = "",
) -> Review:
    """Check one article body (already unwrapped by the writer); nothing is raised.
    ``told``: what the prompt said besides the material (its rules, examples, findings)."""
    review = Review(body=body)
    try:
        converted = to_markdown(body)
    except MarkupError as exc:
        review.problems.append(f"{exc}: write Markdown, not HTML")
        return review
    if converted != body:
        review.notes.append("the reply was HTML: converted to Markdown")
        review.body = body = converted
    if not body.strip():
        review.problems.append("the model returned an empty article")
        return review
    at_bound = bound is not None and bound - 50 <= len(body) <= bound
    if truncated or at_bound:
        review.problems.append(
            "the body stops at the reply's size bound: write a shorter article that ends "
            "on a complete sentence"
        )
    elif not ends_on_sentence(body) and not _as_in_material(body, material):
        tail = body.rstrip()[-40:]
        review.problems.append(f"the body ends mid-sentence (...{tail!r})")
    baseline = "\n\n".join([previous, *material])
    for repeat in find_repetition(body, baseline=baseline):
        review.problems.append(f"a {repeat.describe()}: say each thing once")
    new_text = _new_text(body, previous)
    review.sentences = len(split_sentences(body))
    for claim in evidence.unsupported(new_text):
        review.ungrounded.append(f"{claim} is not in the material")
    flips = [f for m in material for f in Negations(m).flips(new_text)]
    for flip in flips:
        review.ungrounded.append(f"the article {flip.describe()}")
    echo = echoes(told, [previous, *material])
    echoed = [p for p in _passages(new_text) if echo(p)] if told else []
    for passage in echoed:
        review.ungrounded.append(f"{passage[:80]!r} repeats the instructions, not the material")
    if review.ungrounded:
        flipped = [f.sentence for f in flips]

        def ungrounded(passage: str) -> bool:
            flat = normalise(passage)
            return (
                bool(evidence.unsupported(passage))
                or any(s in flat for s in flipped)
                or (bool(echoed) and echo(passage))
            )

        review.body, review.removed = remove_passages(body, ungrounded)
    return review


def echoes(told: str, material: Sequence[str]) -> Callable[[str], bool]:
    """Whether a passage repeats what the model was told rather than what the material
    says: most of its runs of three words are in the prompt's rules, examples or findings,
    and not in the material. A 0.5B model wrote the prompt's example "The material does
    not say who owns it." and a finding it was given into the article itself; having no
    name or number, no claim check caught them."""
    said = _shingles(told)
    known: list[set[tuple[str, ...]]] = []  # the material's runs, read at the first need

    def echo(passage: str) -> bool:
        runs = _shingles(passage)
        if len(runs) < 2 or len(runs & said) * 2 <= len(runs):
            return False
        if not known:
            known.append(set().union(*map(_shingles, material)) if material else set())
        return len(runs & known[0]) * 2 < len(runs)

    return echo


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", text.casefold())
    return {tuple(words[i : i + 3]) for i in range(len(words) - 2)}


def _passages(text: str) -> list[str]:
    """The sentences of ``text``, list items and lines included."""
    return [s for p in split_paragraphs(text) for s in split_sentences(p) or [p]]


def _as_in_material(body: str, material: Sequence[str]) -> bool:
    """Whether the body's last line is a line of the material, word for word (a list
    item the source itself ends that way)."""
    last = " ".join(_LIST_MARK.sub("", body.rstrip().rsplit("\n", 1)[-1]).split())
    return len(last) > 20 and any(last in " ".join(m.split()) for m in material)


def _new_text(body: str, previous: str) -> str:
    """The paragraphs of ``body`` that the previous text did not already have."""
    if not previous:
        return body
    old = {" ".join(p.split()) for p in previous.split("\n\n")}
    return "\n\n".join(p for p in body.split("\n\n") if " ".join(p.split()) not in old)


def accept_summary(value: object, body: str, evidence: Evidence) -> tuple[str | None, str | None]:
    """(the summary in whole sentences within the bound and grounded, or None;
    the problem with it, or None)."""
    text = value.strip() if isinstance(value, str) else ""
    if not text:
        return None, "the summary is empty"
    fitted = fit_sentences(text, SUMMARY_MAX)
    if fitted is None:
        return None, (
            f"the summary is longer than {SUMMARY_MAX} characters or stops mid-sentence: "
            "write one shorter, complete sentence"
        )
    unsupported = evidence.unsupported(fitted)
    if unsupported:
        return None, "the summary states " + ", ".join(
            map(str, unsupported)
        ) + " (not in the material)"
    return fitted, None


def summary_from_body(body: str) -> str:
    """A summary taken from the body: its first sentences that fit the bound, or ""."""
    for paragraph in body.split("\n\n"):
        if paragraph.lstrip().startswith(("#", "|", "-", "*", "```")):
            continue
        fitted = fit_sentences(paragraph, SUMMARY_MAX)
        if fitted:
            return fitted
    return ""


def repair_shape(body: str) -> str:
    """``body`` without what makes its shape unusable, for a second reply that failed
    too: each repeated paragraph and sentence kept once, and the text cut after its last
    complete sentence (or list item, heading, table row). What is left still goes through
    every check; nothing is added."""
    seen: set[str] = set()
    paragraphs: list[str] = []
    for paragraph in split_paragraphs(body):
        kept = []
        for sentence in split_sentences(paragraph) or [paragraph]:
            key = " ".join(sentence.casefold().split())
            if key not in seen:
                seen.add(key)
                kept.append(sentence)
        if kept:
            whole = len(kept) == len(split_sentences(paragraph))
            paragraphs.append(paragraph if whole else " ".join(kept))
    text = "\n\n".join(paragraphs).strip()
    while text and not ends_on_sentence(text):
        cut = max(text.rfind(". "), text.rfind(".\n"), text.rfind("\n"))
        if cut <= 0:
            return ""
        text = text[: cut + 1].rstrip()
    return text
