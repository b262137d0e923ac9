"""Support: whether the material a text was written from states its claims.

    evidence = Evidence("The line is 364.6 km long and has 24 stations.")
    evidence.unsupported("约1000公里, 24 stations")  # -> [Claim('number', '1000', '1000')]

A claim is supported when the material states it, in any spelling: "1,000" and "1000",
"2 March 2026" and "2026-03-02", "two" and "2", case ignored for names.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from kb_ai.grounding.claims import (
    KINDS,
    Claim,
    extract_claims,
    forget_claims,
    material_dates,
    material_numbers,
    normalise,
)
from kb_ai.grounding.shape import split_sentences

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")
_DIGIT_KINDS = frozenset(("date", "number"))


class Evidence:
    """The material of one piece of writing, indexed for looking claims up.

    Built once per material and looked up many times: a lookup costs in proportion to
    the claim, not to the material (but for an identifier that is not one word, which
    is searched for in the text)."""

    def __init__(self, *texts: str, kinds: Collection[str] = KINDS) -> None:
        """``kinds``: the kinds of claim it is asked about (numbers and dates only: it
        does not index the words, most of the cost on a large material)."""
        self.kinds = frozenset(kinds)
        self._flats: list[str] = []  # the material on one line, in pieces (see flat)
        self.numbers: set[str] = set()
        self.dates: set[str] = set()
        self.words: set[str] = set()
        self.add(*texts)

    @property
    def flat(self) -> str:
        """The material lower-cased on one line, runs of space as one (joined when first
        looked at after an ``add``: joining at each add cost a copy of it all)."""
        if len(self._flats) > 1:
            self._flats = [" ".join(self._flats)]
        return self._flats[0] if self._flats else ""

    def add(self, *texts: str) -> None:
        """Take more material in (cheaper than indexing all of it again)."""
        words = bool(self.kinds - _DIGIT_KINDS)
        for text in texts:
            indexed = _index(normalise(text), words) if text else None
            if indexed is None:
                continue
            self.numbers |= indexed.numbers
            self.dates |= indexed.dates
            if words:
                if indexed.flat:
                    self._flats.append(indexed.flat)
                self.words |= indexed.words

    def supports(self, claim: Claim) -> bool:
        if claim.kind not in self.kinds:
            raise ValueError(f"this evidence was not indexed for {claim.kind} claims")
        if claim.kind == "number":
            return claim.value in self.numbers
        if claim.kind == "date":
            if claim.value in self.dates:
                return True
            # 2026-03-02 when the material has "2 March" and, somewhere, 2026
            day = "--" + claim.value[5:] if len(claim.value) == 10 else None
            return bool(day and day in self.dates and claim.value[:4] in self.numbers)
        if claim.kind == "identifier":
            value = " ".join(claim.value.split())
            return _word(value) in self.words or value in self.flat
        # a name: each of its words stated somewhere (a possessive or plural ending aside)
        return all(
            w in self.words or w.rstrip("s") in self.words or w + "s" in self.words
            for w in _WORD.findall(claim.value)
        )

    def unsupported(self, text: str, kinds: Collection[str] | None = None) -> list[Claim]:
        """The claims of ``text`` (of these kinds, by default those it was indexed for)
        this material does not state, in order."""
        return [c for c in extract_claims(text, kinds or self.kinds) if not self.supports(c)]


@dataclass(frozen=True)
class _Indexed:
    """One text of a material, indexed (see Evidence)."""

    numbers: frozenset[str]
    dates: frozenset[str]
    flat: str = ""  # lower-cased on one line, runs of space as one
    words: frozenset[str] = frozenset()


def _index(text: str, words: bool) -> _Indexed | None:
    """``text`` (normalised) indexed, the words too when ``words``; None when empty.

    Each text apart, not the material joined: a source is indexed to check its
    extraction, then again within the material of the article written from it (15.6 ms
    of CPU a compile of 38 decision records); a number or date never spans two texts."""
    if not text:
        return None
    if len(text) <= _REMEMBERED_CHARS:
        return _remembered_index(text, words)
    return _make_index(text, words)


# Short texts only (a source of up to a few pages), so that the memory is bounded.
_REMEMBERED_CHARS = 20_000


@functools.lru_cache(maxsize=512)
def _remembered_index(text: str, words: bool) -> _Indexed:
    return _make_index(text, words)


def _make_index(text: str, words: bool) -> _Indexed:
    numbers, dates = frozenset(material_numbers(text)), frozenset(material_dates(text))
    if not words:
        return _Indexed(numbers, dates)
    low = text.lower()
    return _Indexed(
        numbers, dates, " ".join(low.split()), frozenset(_word(w) for w in set(_WORD.findall(low)))
    )


def forget_remembered() -> None:
    """Empty what the checks remember of the texts they read (the claims of short texts,
    the indexes of materials): a compile run starts with none, and the memory is given
    back."""
    forget_claims()
    _remembered_index.cache_clear()


def _word(word: str) -> str:
    word = word.lower()
    return word[:-2] if word.endswith(("'s", "’s")) else word


def unsupported_claims(text: str, *material: str) -> list[Claim]:
    """The claims of ``text`` that none of ``material`` states."""
    return Evidence(*material).unsupported(text)


def stated_verbatim(text: str, lowered: Sequence[str]) -> bool:
    """Whether ``text`` stands in one of ``lowered`` (texts normalised and lower-cased)
    as written, as a whole token (not
    "30" inside "300" or "30.5", nor "Priya" inside "Priyanka"). Plain string search: a
    regular expression per claim cost more to compile than the lookup saved."""
    needle = text.lower()
    for hay in lowered:
        at = hay.find(needle)
        while at != -1:
            end = at + len(needle)
            if _edge(hay, at - 1, at - 2) and _edge(hay, end, end + 1):
                return True
            at = hay.find(needle, at + 1)
    return False


def _edge(hay: str, i: int, beyond: int) -> bool:
    """Whether position ``i`` of ``hay`` ends a token: outside it, or not a word
    character, nor a point or comma that a digit at ``beyond`` makes part of a number."""
    if not 0 <= i < len(hay):
        return True
    c = hay[i]
    if c.isalnum() or c == "_":
        return False
    return not (c in ".," and 0 <= beyond < len(hay) and hay[beyond].isdigit())


# --- negation -------------------------------------------------------------------------

_NEGATOR_WORDS = (
    "no not never without none nothing nobody neither nor cannot can't don't doesn't "
    "didn't isn't aren't wasn't weren't won't wouldn't shouldn't mustn't needn't hasn't "
    "haven't hadn't"
)
_NEGATORS = frozenset(_NEGATOR_WORDS.split())
_FILLER_WORDS = (
    "a an the any is are was were be been do does did has have had will would should "
    "must can could may might it its this that there to of for at all longer more if "
    "when what which who whom whose and or but so then than as because where while "
    "we they he she you i us them"
)
_FILLER = frozenset(_FILLER_WORDS.split())


@dataclass(frozen=True)
class Flip:
    """A sentence stating as so what the source states as not so."""

    sentence: str
    source: str  # the source's negated sentence

    def describe(self) -> str:
        return f"states {self.sentence!r} but the source says {self.source!r}"


def _tokens(sentence: str) -> list[str]:
    return [_word(w) for w in _WORD.findall(normalise(sentence).lower())]


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _negated_pairs(sentence: str) -> list[tuple[str, str]]:
    """(the content word before a negator, the first content word after it); when the
    negator opens the clause ("We will not change the platform"), the first two content
    words after it."""
    pairs = []
    for clause in _CLAUSE.split(sentence):
        pairs += _clause_pairs(_tokens(clause or ""))
    return pairs


# A negation belongs to its clause: "a shared resource, but it is not managed by us"
# negates "managed by", not "resource".
_CLAUSE = re.compile(r"[,;:()]|\b(?:but|and|or|because|while|although|though|whereas)\b", re.I)


def _clause_pairs(tokens: list[str]) -> list[tuple[str, str]]:
    pairs = []
    skip = _FILLER | _NEGATORS
    for i, tok in enumerate(tokens):
        if tok not in _NEGATORS:
            continue
        before = next((t for t in reversed(tokens[max(0, i - 4) : i]) if t not in skip), None)
        after = [t for t in tokens[i + 1 : i + 7] if t not in skip][:2]
        if before and after:
            pairs.append((_stem(before), _stem(after[0])))
        elif len(after) == 2:
            pairs.append((_stem(after[0]), _stem(after[1])))
    return pairs


def _states_pair(tokens: list[str], stems: list[str], pair: tuple[str, str]) -> bool:
    """Whether a sentence (its tokens and their stems) has the pair's words in order,
    close together, unnegated."""
    for i, s in enumerate(stems):
        if s != pair[0]:
            continue
        window = stems[i + 1 : i + 5]
        if pair[1] in window:
            j = i + 1 + window.index(pair[1])
            near = tokens[max(0, i - 3) : j + 4]
            if not set(near) & _NEGATORS:
                return True
    return False


_NEGATION_HINT = re.compile(
    r"\b(?:no|not|never|without|none|nothing|nobody|neither|nor|cannot)\b|n't", re.I
)


def _flat_words(sentence: str) -> str:
    return " ".join(_WORD.findall(sentence.lower()))


class Negations:
    """What a source negates, read once, to look for its opposite in other texts.

    Pairs are indexed by their first word, so a check costs in proportion to the words
    of the text, not to the number of negations in the source."""

    def __init__(self, source: str) -> None:
        sentences = split_sentences(normalise(source))
        self.negated: dict[tuple[str, str], str] = {}
        for s in sentences:
            if _NEGATION_HINT.search(s):
                for pair in _negated_pairs(s):
                    self.negated.setdefault(pair, s)
        self._open: dict[str, list[tuple[tuple[str, str], str]]] = {}
        self.as_said: set[str] = set()
        if not self.negated:
            return
        by_first: dict[str, list[tuple[str, str]]] = {}
        for pair in self.negated:
            by_first.setdefault(pair[0], []).append(pair)
        # A pair the source also states affirmatively: the source itself says both.
        affirmed: set[tuple[str, str]] = set()
        for s in sentences:
            self.as_said.add(_flat_words(s))
            if _NEGATION_HINT.search(s) or not _may_state(s.lower(), by_first):
                continue
            tokens = _tokens(s)
            stems = [_stem(t) for t in tokens]
            affirmed.update(_stated(tokens, stems, by_first))
        for pair, where in self.negated.items():
            if pair not in affirmed:
                self._open.setdefault(pair[0], []).append((pair, where))

    def flips(self, text: str) -> list[Flip]:
        """Sentences of ``text`` that state without a negation what the source negates."""
        if not self._open:
            return []
        if not _may_state(normalise(text).lower(), self._open):
            return []
        flips = []
        for sentence in split_sentences(normalise(text)):
            if _flat_words(sentence) in self.as_said:  # the source's own sentence
                continue
            tokens = _tokens(sentence)
            stems = [_stem(t) for t in tokens]
            present = set(stems)
            for stem in present & self._open.keys():
                hit = next(
                    (
                        where
                        for pair, where in self._open[stem]
                        if pair[1] in present and _states_pair(tokens, stems, pair)
                    ),
                    None,
                )
                if hit is not None:
                    flips.append(Flip(sentence, hit))
                    break
        return flips


def _may_state(low: str, by_first: Mapping[str, object]) -> bool:
    """Whether a word of ``low`` (a text, lower-cased) opens one of the pairs filed by
    their first word: each sentence's words are words of the whole text, so where none
    does, no sentence of it states one (nor flips it). A few pairs are looked for in the
    text ("need" is in "needs"); many (a large source's), each word of the text in them."""
    if len(by_first) <= _FEW_PAIRS:
        return any(w in low for w in by_first)
    return not by_first.keys().isdisjoint({_stem(_word(w)) for w in _WORD.findall(low)})


_FEW_PAIRS = 32


def _stated(
    tokens: list[str], stems: list[str], by_first: dict[str, list[tuple[str, str]]]
) -> set[tuple[str, str]]:
    """The pairs of ``by_first`` a sentence states (its tokens and their stems)."""
    present = set(stems)
    return {
        pair
        for stem in present & by_first.keys()
        for pair in by_first[stem]
        if pair[1] in present and _states_pair(tokens, stems, pair)
    }


def negation_flips(text: str, source: str) -> list[Flip]:
    """Sentences of ``text`` that state without a negation what ``source`` negates
    ("needs persistence" where the source says "needs no persistence").

    A pair the source also states affirmatively somewhere is not counted: then the
    source itself says both. (Checking many texts against one source: :class:`Negations`.)
    """
    return Negations(source).flips(text)


# --- removal --------------------------------------------------------------------------

_FENCED = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.S | re.M)
_STRUCTURED_LINE = re.compile(r"^\s*(?:[-*+]|\d+[.)]|#{1,6}|\|)\s*")


def remove_unsupported(text: str, evidence: Evidence) -> tuple[str, list[str]]:
    """``text`` without the sentences, list items, table rows and code blocks that hold a
    claim ``evidence`` does not support; and what was removed, in order."""
    return remove_passages(text, lambda passage: bool(evidence.unsupported(passage)))


def remove_passages(text: str, is_bad: Callable[[str], bool]) -> tuple[str, list[str]]:
    """``text`` without the passages ``is_bad`` picks, and those passages, in order.

    A passage is a sentence of a paragraph, a line of a list, table or heading, or a
    whole fenced code block; Markdown structure around them is kept.
    """
    removed: list[str] = []
    pieces: list[str] = []
    pos = 0
    for m in _FENCED.finditer(text):
        pieces.append(_remove_in_prose(text[pos : m.start()], is_bad, removed))
        block = m.group(0)
        if is_bad(block):
            removed.append(block)
        else:
            pieces.append(block)
        pos = m.end()
    pieces.append(_remove_in_prose(text[pos:], is_bad, removed))
    out = "\n\n".join(p.strip("\n") for p in pieces if p.strip())
    return re.sub(r"\n{3,}", "\n\n", out).strip(), removed


def _remove_in_line(line: str, is_bad: Callable[[str], bool], removed: list[str]) -> str | None:
    """A list item, table row or heading without its bad sentences (None: all bad)."""
    if not line.strip() or not is_bad(line):
        return line
    m = _ITEM.match(line)
    if m is None:  # a table row or heading: one passage
        removed.append(line.strip())
        return None
    sentences = split_sentences(m.group(2))
    good = [s for s in sentences if not is_bad(s)]
    if not good or len(good) == len(sentences):
        removed.append(line.strip())
        return None
    removed += [s for s in sentences if s not in good]
    return m.group(1) + " ".join(good)


_ITEM = re.compile(r"^(\s*(?:[-*+]|\d+[.)])\s+)(.*)$")


def _remove_in_prose(text: str, is_bad: Callable[[str], bool], removed: list[str]) -> str:
    blocks = []
    for block in re.split(r"\n[ \t]*\n", text):
        if not block.strip():
            continue
        lines = block.split("\n")
        if any(_STRUCTURED_LINE.match(ln) for ln in lines):
            kept = [k for ln in lines if (k := _remove_in_line(ln, is_bad, removed)) is not None]
            if any(k.strip() for k in kept):
                blocks.append("\n".join(kept))
            continue
        kept_sentences = []
        for sentence in split_sentences(block):
            if is_bad(sentence):
                removed.append(sentence)
            else:
                kept_sentences.append(sentence)
        if kept_sentences:
            blocks.append(" ".join(kept_sentences))
    return "\n\n".join(blocks)
