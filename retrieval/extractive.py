"""Extractive answers, for small models: the model picks sentences, kb-ai quotes them.

A 0.5B model asked for free text repeats itself, invents reasons and numbers and cites
the wrong page. Asked instead to choose, from the numbered sentences of the pages read,
the few that answer the question (an enum under a grammar, so the reply is always valid
and always ends), it can only be wrong by choosing badly or choosing nothing. The answer
is then the chosen sentences verbatim, each page's group followed by its citation, or
"the wiki does not cover this" when it chose none.

Measured with the 0.5B model, it mostly picks the first ids offered. So only sentences
that share a word with the question are offered, best match first (s1), at most
MAX_OFFERED; when none shares a word, the answer is "not covered" without a model call.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from retrieval.pages import Page
from wiki.words import fold, query_terms, words

MAX_PICKS = 4
MAX_SENTENCES = 160  # read from the pages, before the question filters them
MAX_OFFERED = 12  # offered to the model: the enum and the prompt stay small
MAX_SENTENCE_CHARS = 600
NOT_COVERED = "The wiki does not cover this question."

# A sentence ends at . ! or ? and a space before a capital or a digit, unless the stop
# is an ellipsis (`SELECT ... FOR UPDATE`), ends an abbreviation ("e.g.", "Dr.") or an
# initial ("J. Smith"), or lies inside a code span (masked first).
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[\"'“(\[]?[A-Z0-9])")
_ABBREVIATIONS_TEXT = "e.g i.e etc vs cf approx dr mr mrs ms prof st no inc ltd jr sr fig eq u.s"
_ABBREVIATIONS = frozenset(_ABBREVIATIONS_TEXT.split())
_WORD_BEFORE = re.compile(r"([\w.]+)[.!?]$")
_CODE = re.compile(r"`[^`\n]+`")
# Transcript noise: {vocalsound}-style marks, and a speaker turn with no words after it.
_MARK = re.compile(r"\{[a-z_]{2,30}\}")
_EMPTY_TURN = re.compile(r"^(?:[\w .'-]{1,40}:\s*)+$")
_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_FENCE = re.compile(r"^\s*(```|~~~)")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")
# A pick reply as a grammar writes it: ids are read as they stream in only while the text
# so far is this head and a list of plain strings.
_PICKS_HEAD = re.compile(r'\s*\{\s*"sentences"\s*:\s*\[')
_PICK_ID = re.compile(r'\s*"([^"\\]{0,16})"\s*,?')


@dataclass(frozen=True)
class Sentence:
    id: str
    text: str
    path: str
    title: str


@dataclass(frozen=True)
class NumberedPage:
    path: str
    title: str
    sentences: list[Sentence]


def number_sentences(
    pages: Sequence[Page], question: str | None = None, limit: int = MAX_OFFERED
) -> list[NumberedPage]:
    """The sentences offered to the model, with ids s1, s2, ... (headings, code and table
    rules left out; list items and table rows count as sentences). With ``question``,
    only those sharing a word with it, rarest words first (see below), at most
    ``limit``; without, every sentence in page order."""
    found: list[tuple[int, int, str, Page]] = []
    for page in pages:
        for text in sentences_of(page.text):
            if len(found) >= MAX_SENTENCES:
                break
            found.append((0, len(found), text, page))
    if question is not None:
        # A word of the question few sentences have says more than one most have (the
        # page's own subject): hits weigh by their rarity among the sentences read.
        terms = query_terms(question)
        hits = [(_hits(text, terms), i, text, page) for _, i, text, page in found]
        df = Counter(t for h, *_ in hits for t in h)
        n = len(hits)

        def weight(h: set[str]) -> float:
            return sum(math.log((n + 1) / (df[t] + 0.5)) for t in h)

        found = sorted((-weight(h), i, text, page) for h, i, text, page in hits if h)[:limit]
    out: list[NumberedPage] = []
    for n, (_, _, text, page) in enumerate(found, 1):
        out.append(
            NumberedPage(page.path, page.title, [Sentence(f"s{n}", text, page.path, page.title)])
        )
    return out


def _hits(text: str, terms: Sequence) -> set[str]:
    """The question's words the sentence has (a stem prefix counts for its word)."""
    found = set(words(fold(text).casefold()))
    hit = set()
    for t in terms:
        if (t.text in found) if not t.prefix else any(w.startswith(t.text) for w in found):
            hit.add(t.widens or t.text)
    return hit


def sentences_of(text: str) -> Iterator[str]:
    """The sentences of a page: a paragraph or list item wrapped over several lines is
    joined first (notes are often hard-wrapped, and a sentence cut at a line end was
    quoted cut); each table row is one; headings, code and table rules are left out."""
    in_code = False
    block: list[str] = []
    for line in [*text.splitlines(), ""]:
        stripped = line.strip()
        fence = _FENCE.match(line)
        in_code ^= bool(fence)
        skipped = in_code or fence or stripped.startswith("#") or _TABLE_RULE.match(line)
        item = _MARKER.match(line)
        if block and (skipped or item or not stripped or stripped.startswith("|")):
            yield from _split(" ".join(block))  # the paragraph or item so far is whole
            block = []
        if skipped:
            continue
        if stripped.startswith("|"):
            yield from _split(
                " | ".join(c.strip() for c in stripped.strip("|").split("|") if c.strip())
            )
        elif stripped:
            block.append(_MARKER.sub("", line).strip() if item else stripped)


def _split(text: str) -> Iterator[str]:
    text = " ".join(_MARK.sub(" ", text).split())
    for part in _cut(text):
        part = part.strip()
        if _EMPTY_TURN.match(part):
            continue  # "Project Manager:" once its noise is gone
        if 3 <= len(part) <= MAX_SENTENCE_CHARS and re.search(r"\w", part):
            yield part


def _cut(text: str) -> Iterator[str]:
    """The sentences of ``text``: cut where _SPLIT says, but not in a code span, after an
    ellipsis, an abbreviation or an initial."""
    spans = [m.span() for m in _CODE.finditer(text)]
    start = 0
    for m in _SPLIT.finditer(text):
        end = m.start()
        if any(a < end < b for a, b in spans) or text[:end].endswith(("..", "…")):
            continue
        word = _WORD_BEFORE.search(text[start:end])
        before = word.group(1).casefold() if word else ""
        if before in _ABBREVIATIONS or (len(before) == 1 and before.isalpha()):
            continue
        yield text[start:end]
        start = m.end()
    yield text[start:]


def pick_schema(pages: Sequence[NumberedPage]) -> dict:
    ids = [s.id for p in pages for s in p.sentences]
    return {
        "type": "object",
        "properties": {
            "sentences": {
                "type": "array",
                "items": {"type": "string", "enum": ids},
                "maxItems": MAX_PICKS,
            }
        },
        "required": ["sentences"],
        "additionalProperties": False,
    }


def chosen(data: object, pages: Sequence[NumberedPage]) -> list[Sentence]:
    """The sentences a reply names, in its order: unknown ids (a model without a grammar
    may invent them), repeats and anything past MAX_PICKS are dropped."""
    return _chosen(data, {s.id: s for p in pages for s in p.sentences})


def _chosen(data: object, by_id: dict[str, Sentence]) -> list[Sentence]:
    raw = data.get("sentences") if isinstance(data, dict) else None
    picks: list[Sentence] = []
    for item in raw if isinstance(raw, list) else ():
        s = by_id.get(str(item).strip()) if isinstance(item, str | int) else None
        if s is None and isinstance(item, int):
            s = by_id.get(f"s{item}")
        if s is not None and s not in picks:
            picks.append(s)
    return picks[:MAX_PICKS]


class PartialPicks:
    """The sentences a pick reply names, as it streams in: an id counts once its closing
    quote has arrived, while the text so far is the plain ``{"sentences": ["s3", ...``
    a grammar writes. Anything else (a model without a grammar may put prose or a code
    fence first) waits for the whole reply and :func:`chosen`. Unknown ids, repeats and
    anything past MAX_PICKS are dropped, as :func:`chosen` does."""

    def __init__(self, pages: Sequence[NumberedPage]) -> None:
        self.by_id = {s.id: s for p in pages for s in p.sentences}
        self.text = ""
        self.picks: list[Sentence] = []
        self._ids = 0  # ids read so far, known or not

    def feed(self, text: str) -> list[Sentence]:
        """The sentences whose ids ``text`` completes."""
        self.text += text
        head = _PICKS_HEAD.match(self.text)
        if head is None:
            return []
        ids, pos = [], head.end()
        while m := _PICK_ID.match(self.text, pos):
            ids.append(m.group(1))
            pos = m.end()
        new: list[Sentence] = []
        for item in ids[self._ids :]:
            s = self.by_id.get(item.strip())
            if s is not None and s not in self.picks and len(self.picks) < MAX_PICKS:
                self.picks.append(s)
                new.append(s)
        self._ids = len(ids)
        return new

    def finish(self, data: object) -> list[Sentence]:
        """The sentences of the whole reply not handed out yet: those streamed stay (they
        were shown), the reply's others follow, up to MAX_PICKS in all."""
        new = [s for s in _chosen(data, self.by_id) if s not in self.picks]
        new = new[: MAX_PICKS - len(self.picks)]
        self.picks += new
        return new


class Quoter:
    """Composes the answer a sentence at a time: each sentence verbatim as it is picked,
    and a [Title](path) citation once its page's run of sentences has ended."""

    def __init__(self) -> None:
        self.last: Sentence | None = None

    def add(self, s: Sentence) -> list[str]:
        pieces = []
        if self.last is not None and self.last.path != s.path:
            pieces.append(_cite(self.last))
        pieces.append(("" if self.last is None else " ") + s.text)
        self.last = s
        return pieces

    def end(self) -> list[str]:
        """The last citation, or "not covered" when nothing was picked."""
        return [NOT_COVERED] if self.last is None else [_cite(self.last)]


def _cite(s: Sentence) -> str:
    return f" [{s.title}]({s.path})"
