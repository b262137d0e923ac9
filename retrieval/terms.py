"""Meaningful terms: the words of a text that say what it is about.

A question and a page share a subject when they share a meaningful term. Stop words
and question words ("what", "how", "多少": wiki.words.STOP_WORDS, the one list) do not count; words are compared by a crude
stem (plural, -ing, -ed and a final -e dropped, then at most 7 letters kept: "cache",
"caches", "caching" and "cached" meet); numbers count by value ("1,000" and "1000",
"02" and "2" meet). Chinese, Japanese and Korean have
no spaces, so their runs are cut into overlapping character bigrams ("高铁线路" -> 高铁,
铁线, 线路), as the search index does; bigrams of question words and those holding
hiragana (particles, endings) are dropped. Text is folded and cut as the search folds
it (wiki.words.tokens: NFKC, ø -> o, traditional Chinese to simplified).

``content_terms`` drops GENERIC words too (what a question uses for any subject: "year",
"often"), and ``held`` matches a question's terms in a sentence: retrieval/coverage.py
and the answering check of checks.py use them.

Used twice in answering: before any model call, to abstain when no candidate page shares
a term with the question; after the answer, to check that a cited page contains the key
terms of the claim that cites it.
"""

from __future__ import annotations

import re
from functools import lru_cache

from wiki.words import CJK_RUN, CJK_STOP_BIGRAMS, STOP_WORDS, tokens

_KANA = re.compile(r"[\u3040-\u309f]")

_SUFFIXES = ("ments", "ment", "ies", "ing", "es", "ed", "s")
_STEM_CHARS = 7


# A page of a few thousand words repeats most of them, and the pages of one wiki share
# most of theirs: each word is stemmed once (the cache holds at most 65,536 words, about 10 MB).
@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A crude stem that puts the common inflections of an English word together."""
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    for suffix in _SUFFIXES:
        if not w.endswith(suffix) or len(w) - len(suffix) < 3:
            continue
        if suffix == "s" and w[-2] in "sui":  # class, status, analysis
            break
        w = w[: -len(suffix)] + ("y" if suffix == "ies" else "")
        break
    if w.endswith("e") and len(w) >= 4:
        w = w[:-1]
    return w[:_STEM_CHARS]


def number_value(text: str) -> str:
    """A number as written, without thousands separators or leading zeros: 1,000 -> 1000,
    02 -> 2, 364.60 -> 364.6."""
    digits = text.replace(",", "")
    whole, _, frac = digits.partition(".")
    whole = whole.lstrip("0") or "0"
    frac = frac.rstrip("0")
    return f"{whole}.{frac}" if frac else whole


def _cjk_terms(run: str) -> list[str]:
    if len(run) == 1:
        return [] if _KANA.match(run) else [run]
    out = []
    for i in range(len(run) - 1):
        pair = run[i : i + 2]
        if pair in CJK_STOP_BIGRAMS or _KANA.search(pair):  # kana: particles and endings
            continue
        out.append(pair)
    return out


def terms(text: str) -> set[str]:
    """The meaningful terms of ``text``: stems of content words, numbers, CJK bigrams."""
    found: set[str] = set()
    for token in tokens(text):
        if CJK_RUN.match(token):
            found.update(_cjk_terms(token))
        elif token[0].isdigit():
            value = number_value(token)
            if len(value) > 1:  # a lone digit says little about a subject
                found.add(value)
        else:
            word = token.lower()
            if len(word) >= 3 and word not in STOP_WORDS:
                found.add(stem(word))
    return found


def shares_a_term(question_terms: set[str], text: str) -> bool:
    """Whether ``text`` has at least one of ``question_terms``."""
    return bool(question_terms) and not question_terms.isdisjoint(terms(text))


# Words a question uses whatever its subject: they say what kind of answer is wanted
# ("year", "name"), not what it is about; kept as their stems.
_GENERIC_TEXT = """
    name named called known year years time times date first last also kind type part
    people person thing things way many much number one two three new old used use
    often rather instead usually exactly really well long both same different larger
    bigger smaller older oldest younger youngest longer shorter earlier later
"""
GENERIC = frozenset(map(stem, _GENERIC_TEXT.split()))


def content_terms(question: str) -> set[str]:
    """The terms of ``question`` that say what it is about."""
    return terms(question) - GENERIC


def held(wanted: frozenset[str], have: set[str]) -> set[str]:
    """The wanted terms ``have`` holds; a stem that begins the other counts (approv,
    approva: the crude stems of "approves" and "approval" part at their 7th letter)."""
    hit = set(wanted & have)
    for t in wanted - hit:
        if len(t) >= 4 and any(len(h) >= 4 and (h.startswith(t) or t.startswith(h)) for h in have):
            hit.add(t)
    return hit
