"""Words as the search sees them: one tokenizer for what is indexed and what is asked.

SQLite's unicode61 tokenizer (with porter stemming on top) splits on anything that is
not a letter or digit, lower-cases, and strips the accents that Unicode can decompose.
What it cannot do, and what this module adds before text reaches it, on both sides:

- letters with no decomposition are folded by hand: ø -> o, æ -> ae, ß -> ss, ł -> l, ...
  (Søren meets Soren, Straße meets Strasse, Łódź meets Lodz);
- a word written with symbols gets a glued form of its own: C++ -> cplusplus, C# ->
  csharp, AT&T -> atandt, f(x) -> fx; a Latin name glued to a Chinese character (C罗)
  keeps both as one token, so the single letter is not lost;
- letters glued to digits are also split (CVPR2022 -> cvpr2022 cvpr 2022, GPT4 -> gpt4
  gpt 4), so they meet their spaced and hyphenated forms (CVPR 2022, GPT-4);
- Chinese, Japanese and Korean runs become overlapping bigrams plus every single
  character ("数据库" -> "数据 据库 数 据 库"): bigrams carry words, single characters
  reach a one-character name beside punctuation (䲟（) that no bigram of a question meets;
- traditional Chinese characters are folded to simplified ones (電腦 -> 电脑) when the
  OpenCC library is installed (it is a dependency; without it the folding is skipped).

``index_text`` is what goes into an index column; ``query_terms`` what a question
searches for. It is also the one home of the words every part shares: ``STOP_WORDS``
and ``CJK_STOP_BIGRAMS`` (words that say nothing of a subject: the search, the catalog
ranking of classify, link detection and the answer checks of retrieval/terms.py all
drop the same ones; kept in kb_ai/lexicon.py, which the prompt hook
reads too), and the tokenizers ``words`` (runs of letters and digits) and
``tokens`` (numbers and words as the answer checks count them). This module imports
nothing of kb-ai but kb_ai/lexicon.py, which imports nothing.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

from kb_ai.lexicon import CJK_CLASS, STOP_WORDS

__all__ = [
    "CJK_CLASS",
    "CJK_RUN",
    "CJK_STOP_BIGRAMS",
    "STOP_WORDS",
    "WORD",
    "QueryTerm",
    "fold",
    "index_text",
    "query_terms",
    "tokens",
    "words",
]

CJK_RUN = re.compile(f"[{CJK_CLASS}]+")
# A word: a run of letters and digits (the underscore splits, as in the index).
WORD = re.compile(r"[^\W_]+")

# Letters Unicode does not decompose into a base letter and an accent.
_FOLD = str.maketrans(
    {
        "ø": "o", "Ø": "O", "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "ß": "ss",
        "ẞ": "SS", "ł": "l", "Ł": "L", "đ": "d", "Đ": "D", "ð": "d", "Ð": "D",
        "þ": "th", "Þ": "TH", "ı": "i", "ħ": "h", "Ħ": "H", "ŧ": "t", "Ŧ": "T",
    }
)  # fmt: skip

# Sentence punctuation around a word is not part of it; the symbols that name something
# in a word (C++, C#, AT&T, f(x)) are.
_SENTENCE_MARKS = ".,;:!?\"'“”‘’。，；：！？、"
_SYMBOL_NAMES = {"+": "plus", "#": "sharp", "&": "and"}
_LATIN_THEN_CJK = re.compile(f"(?<![^\\W_])([^\\W_{CJK_CLASS}]+)([{CJK_CLASS}])")
_LETTERS_DIGITS = re.compile(r"[^\W\d_]+|\d+")

# STOP_WORDS (kb_ai/lexicon.py): one list for every part of kb-ai, the prompt hook too.
# Question and function words of Chinese and Japanese, as the bigrams they cut into.
_CJK_STOP_TEXT = """
    什么 多少 哪些 哪个 哪里 哪位 为什 为何 怎么 怎样 如何 是否 请问 是什 的是 是哪 有多
    多长 多大 多久 多远 多高 几个 是多 有没 没有 我们 你们 他们 这个 那个 一个 是一 可以
    ですか ますか なんで 何で どこ どの だれ いつ なぜ どう
"""
CJK_STOP_BIGRAMS = frozenset(
    word[i : i + 2] for word in _CJK_STOP_TEXT.split() for i in range(max(len(word) - 1, 1))
)
# Characters too common to search alone.
_CJK_STOP_CHARS = frozenset("的是了在有和与及或也都就而之其这那个么什哪谁吗呢吧啊为以于被把从到对")
# Crude suffixes tried, longest first, to reach the other forms of a word by prefix.
_SUFFIXES = (
    "ations", "ation", "ments", "ment", "ings", "ing", "ies", "ied", "ers", "er",
    "es", "ed", "ly", "s",
)  # fmt: skip
_MIN_PREFIX = 5


# Tokens as the answer checks count them: CJK runs, numbers with their separators
# (1,000.50), words with an apostrophe inside (don't, team's).
_TOKEN = re.compile(rf"[{CJK_CLASS}]+|\d+(?:[.,]\d+)*|[^\W\d_]+(?:['’][^\W\d_]+)?")


def words(text: str) -> list[str]:
    """The runs of letters and digits of ``text``, as they are written (no folding)."""
    return WORD.findall(text)


def tokens(text: str) -> list[str]:
    """``text`` folded and cut into CJK runs, numbers (1,000.50 whole) and words (an
    apostrophe inside one keeps it whole)."""
    return _TOKEN.findall(fold(text))


@dataclass(frozen=True)
class QueryTerm:
    """One term of a question: ``text`` as indexed; a ``prefix`` term matches words it
    starts; ``widens`` names the exact term a prefix term reaches the kin of. A single
    CJK character is searched only where its bigrams are unknown (``unless``), so a
    two-character word still finds exactly the pages that have it."""

    text: str
    prefix: bool = False
    widens: str | None = None
    unless: tuple[str, ...] = ()  # searched only when none of these terms is in the index


@functools.cache
def _simplified() -> object | None:
    try:
        import opencc  # noqa: PLC0415 - optional; loaded once, on the first CJK text
    except ImportError:
        return None
    return opencc.OpenCC("t2s")


def fold(text: str) -> str:
    """``text`` in NFKC with unsplittable letters folded, traditional Chinese simplified."""
    text = unicodedata.normalize("NFKC", text).translate(_FOLD)
    if CJK_RUN.search(text) and (converter := _simplified()) is not None:
        text = converter.convert(text)
    return text


def _glued(text: str) -> list[str]:
    """Extra tokens for ``text``: glued symbolic words, Latin+CJK names, letter/digit splits.

    Written for speed (every article body passes here): plain words are skipped on the
    cheap string tests, and the regular expressions only see the rest.
    """
    extra: list[str] = []
    for chunk in text.split():
        if chunk.isalpha() and (chunk.isascii() or not CJK_RUN.search(chunk)):
            continue
        core = chunk.strip(_SENTENCE_MARKS).strip("()")
        if not core or core.isdigit() or (core.isalpha() and core.isascii()):
            continue
        if any(mark in core for mark in "+#&(") and any(ch.isalnum() for ch in core):
            glued = "".join(_SYMBOL_NAMES.get(ch, ch) for ch in core if ch.isalnum() or ch in "+#&")
            if glued != core and len(glued) <= 40:
                extra.append(glued)
        if CJK_RUN.search(core):
            extra += [m.group(1) + m.group(2) for m in _LATIN_THEN_CJK.finditer(core)]
            continue
        for word in WORD.findall(core):
            if not (word.isalpha() or word.isdigit()):
                extra += _LETTERS_DIGITS.findall(word)
    return extra


def _cjk_tokens(run: str) -> list[str]:
    return [run[i : i + 2] for i in range(len(run) - 1)] + list(run)


def index_text(text: str) -> str:
    """``text`` as an index column holds it: folded, CJK cut, extra tokens appended."""
    text = fold(text)
    extra = _glued(text)
    body = CJK_RUN.sub(lambda m: " " + " ".join(_cjk_tokens(m.group())) + " ", text)
    return body if not extra else body + "\n" + " ".join(extra)


def query_terms(question: str) -> list[QueryTerm]:
    """The terms ``question`` searches for, in order, without repeats.

    Stop words are dropped, unless the question is made of nothing else (The Who, It);
    each long word also searches the prefix of its crude stem (deploys -> deplo*), which
    reaches forms that porter stems apart (deploys -> deploi, deployment -> deploy).
    """
    text = fold(question).casefold()
    terms: dict[str, QueryTerm] = {}

    def add(term: QueryTerm) -> None:
        terms.setdefault(term.text + ("*" if term.prefix else ""), term)

    words: list[str] = []
    position = 0
    for match in CJK_RUN.finditer(text):
        words += WORD.findall(text[position : match.start()])
        run = match.group()
        bigrams = [run[i : i + 2] for i in range(len(run) - 1)]
        for bigram in bigrams:
            if bigram not in CJK_STOP_BIGRAMS:
                add(QueryTerm(bigram))
        if not bigrams:
            add(QueryTerm(run, prefix=True))
        for i, char in enumerate(run if bigrams else ""):
            if char not in _CJK_STOP_CHARS:
                add(QueryTerm(char, unless=tuple(bigrams[max(i - 1, 0) : i + 1])))
        position = match.end()
    words += WORD.findall(text[position:])
    glued = [g for g in _glued(text) if g not in STOP_WORDS and (len(g) > 1 or g.isdigit())]
    kept = [w for w in words if w not in STOP_WORDS and (len(w) > 1 or w.isdigit())]
    if not (kept or glued or terms):
        kept = words  # The Who, It: a name made of stop words is searched as it is
    for word in kept:
        add(QueryTerm(word))
        prefix = _crude_stem(word)
        if len(prefix) >= _MIN_PREFIX:
            add(QueryTerm(prefix, prefix=True, widens=word))
    for extra in glued:
        add(QueryTerm(extra))
    return list(terms.values())


def _crude_stem(word: str) -> str:
    """``word`` without one common suffix and a trailing e/i/y: a prefix of its kin."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_PREFIX - 1:
            word = word[: -len(suffix)]
            break
    return word.rstrip("eiy") if len(word) > _MIN_PREFIX else word
