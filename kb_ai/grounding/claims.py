"""Claims: the names, numbers, dates and identifiers a text states.

These are what a model most often invents and what a reader most relies on, and they
can be checked mechanically: each is looked for in the material (see support.py).

    >>> [(c.kind, c.value) for c in extract_claims("On 2 March 2026 Priya moved 1,000 jobs.")]
    [('date', '2026-03-02'), ('number', '1000'), ('name', 'priya')]

Text is NFKC-normalised first, so full-width digits count as digits; CJK text yields
numbers and dates ("约1000公里" claims 1000; "2026年3月2日" is a date). Names are found
by capitals, so CJK text yields no names.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

KINDS = ("date", "number", "identifier", "name")


def _words(text: str) -> list[str]:
    """The words of a space-separated list written as one string."""
    return text.split()


MONTHS = {
    name: i
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        1,
    )
    for name in names
}
NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate(
        _words(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen "
            "fourteen fifteen sixteen seventeen eighteen nineteen twenty"
        )
    )
}
NUMBER_WORDS.update({"a dozen": "12", "dozen": "12", "hundred": "100", "thousand": "1000"})
# The tens and what is written with them: "thirty" is 30, "forty-five" and "forty five" 45.
_UNITS = _words("one two three four five six seven eight nine")
for _n, _tens in enumerate(_words("twenty thirty forty fifty sixty seventy eighty ninety"), 2):
    NUMBER_WORDS[_tens] = str(10 * _n)
    NUMBER_WORDS.update({f"{_tens}-{u}": str(10 * _n + i) for i, u in enumerate(_UNITS, 1)})
    NUMBER_WORDS.update({f"{_tens} {u}": str(10 * _n + i) for i, u in enumerate(_UNITS, 1)})
_TENS_WORDS = frozenset(_words("twenty thirty forty fifty sixty seventy eighty ninety"))
_UNIT_WORDS = frozenset(_UNITS)
_SINGLE_NUMBER_WORDS = frozenset(w for w in NUMBER_WORDS if not re.search(r"[ -]", w))
_JOINED_NUMBER = re.compile(
    r"\b(" + "|".join(sorted(_TENS_WORDS)) + r")[ -](" + "|".join(_UNITS) + r")\b"
)
_WORD_RUN = re.compile(r"\w+")
CJK_NUMERALS = {c: str(i) for i, c in enumerate("零一二三四五六七八九十")} | {"两": "2"}


@dataclass(frozen=True)
class Claim:
    """One checkable statement part. ``value`` is the normalised form matched against
    the material (a number without grouping, an ISO date or part of one, lower case)."""

    kind: str  # date | number | identifier | name
    text: str  # as written (after NFKC)
    value: str

    def __str__(self) -> str:
        return f"{self.kind} {self.text!r}"


_MONTH = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"  # noqa: E501
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_YEAR = r"(?:1[5-9]\d\d|2\d\d\d)"
# A year not after a digit or point, written to start with its first digit: a pattern
# that starts with a look-behind is tried at every character, one that starts with a
# digit only where there is one (several times faster on long material; the same
# matches). The same for the numbers below.
_YEAR_ALONE = r"(?:1(?<![\d.]1)[5-9]\d\d|2(?<![\d.]2)\d\d\d)"
_DATE_PATTERNS = [
    # 2026-03-02, 2026/3/2, 2026.03.02
    (
        "ymd",
        re.compile(rf"{_YEAR_ALONE}([-/.])(?:0?[1-9]|1[0-2])\1(?:[12]\d|3[01]|0?[1-9])(?![\d])"),
    ),
    # 2026年3月2日, 2026年3月
    ("cjk", re.compile(rf"({_YEAR})\s*年\s*(?:(\d{{1,2}})\s*月(?:\s*(\d{{1,2}})\s*[日号])?)?")),
    ("cjk_md", re.compile(r"(?<!\d)(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]")),
    # 2 March 2026, 2nd of March, 2026
    ("dmy", re.compile(rf"\b({_DAY})\s+(?:of\s+)?({_MONTH})(?:,?\s+({_YEAR}))?\b", re.I)),
    # March 2, 2026 / March 2026 / March 2
    ("mdy", re.compile(rf"\b({_MONTH})\s+(?:({_DAY})(?:,?\s+({_YEAR}))?|({_YEAR}))\b", re.I)),
    # 2026-03 (a month)
    ("ym", re.compile(rf"{_YEAR_ALONE}-(?:0[1-9]|1[0-2])(?![\d-])")),
]
_URL = re.compile(r"\b(?:https?|ftp)://[^\s<>()\[\]]+[^\s<>()\[\].,;:!?'\"]")
_LINK_TARGET = re.compile(r"\]\([^)\s]*\)")
_CODE_FENCE = re.compile(r"^(\s*)(```|~~~)", re.M)
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
# word chars joined by . _ / : (a file, a module, a path) or a word with digits and letters
_JOINED = re.compile(
    r"(?<![A-Za-z0-9_.-])[A-Za-z0-9_][A-Za-z0-9_-]*(?:[./:][A-Za-z0-9_][A-Za-z0-9_-]*)+(?![A-Za-z0-9_])"
)
_TOKEN = re.compile(r"(?<![A-Za-z0-9_.-])[A-Za-z0-9][A-Za-z0-9_-]*(?<!-)(?![A-Za-z0-9_])")
_UNIT_NUMBER = re.compile(
    r"(\d(?<![A-Za-z0-9_.]\d)\d*(?:\.\d+)?)([A-Za-z]{1,4}|[^\W\d_A-Za-z]{1,4})(?![A-Za-z0-9_])"
)
_ORDINAL = re.compile(r"^\d+(?:st|nd|rd|th)$", re.I)
_ACRONYM = re.compile(r"(?<![\w.])[A-Z][A-Z0-9&]{1,}s?(?![\w])")
_INNER_CAPS = re.compile(r"(?<![\w.])[^\W\d_]*[a-z][A-Z]\w*(?![\w])")
_NUMBER = re.compile(
    r"\d(?<![A-Za-z0-9_.,]\d)(?:\d{0,2}(?:,\d{3})+(?:\.\d+)?(?![\d])|\d*(?:\.\d+)?(?![\d]))"
)
_LIST_MARK = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+", re.M)
_ABBREVIATIONS = frozenset(_words("e.g i.e etc vs cf a.m p.m"))
# Capitalised words that start more sentences than they name things.
_NOT_NAMES = frozenset(
    _words(
        "i i'm i've i'd i'll ok okay yes no mr mrs ms dr monday tuesday wednesday thursday "
        "friday saturday sunday"
    )
)


def normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def number_value(text: str) -> str | None:
    """``text`` ("1,000", "364.60", "２０") as a canonical number string, or None."""
    raw = normalise(text).replace(",", "").strip()
    try:
        value = Decimal(raw)
    except InvalidOperation:
        return None
    if not value.is_finite():
        return None
    out = format(value.normalize(), "f")
    return out if "." not in out else out.rstrip("0").rstrip(".")


def _date_value(kind: str, m: re.Match[str]) -> str | None:
    g = m.groups()
    if kind == "ymd":
        y, mo, d = re.split(r"[-/.]", m.group(0))
        return f"{int(y):04d}-{int(mo):02d}-{int(d):02d}"
    if kind == "ym":
        y, mo = m.group(0).split("-")
        return f"{int(y):04d}-{int(mo):02d}"
    if kind == "cjk":
        y, mo, d = g
        if not mo:
            return f"{int(y):04d}"
        if not 1 <= int(mo) <= 12:
            return None
        return f"{int(y):04d}-{int(mo):02d}" + (f"-{int(d):02d}" if d else "")
    if kind == "cjk_md":
        mo, d = int(g[0]), int(g[1])
        return f"--{mo:02d}-{d:02d}" if 1 <= mo <= 12 and 1 <= d <= 31 else None
    if kind == "dmy":
        d, mon, y = g
        month = MONTHS[mon.lower().rstrip(".")]
        day = int(re.sub(r"\D", "", d))
        return f"{y}-{month:02d}-{day:02d}" if y else f"--{month:02d}-{day:02d}"
    mon, d, y, y_only = g
    if mon.lower().rstrip(".") == "may" and not (d or y or y_only):
        return None
    month = MONTHS[mon.lower().rstrip(".")]
    if y_only:
        return f"{y_only}-{month:02d}"
    day = int(re.sub(r"\D", "", d))
    return f"{y}-{month:02d}-{day:02d}" if y else f"--{month:02d}-{day:02d}"


def _sentence_starts(text: str) -> set[int]:
    """Offsets where a sentence, line, list item, heading, cell or quote begins."""
    starts = {0}
    for m in re.finditer(r"(?:^|\n)[ \t>#|*_-]*(?:\d+[.)]\s+)?[*_\"'“(\[]*", text):
        starts.add(m.end())
    for m in re.finditer(r"[.!?:;|。！？；][)\"'”’*_]*\s+[*_\"'“(\[]*", text):
        starts.add(m.end())
    for m in re.finditer(r"[(\"“‘\[]", text):
        starts.add(m.end())
    return starts


def extract_claims(text: str, kinds: Collection[str] = KINDS) -> list[Claim]:
    """The claims in ``text`` of these ``kinds``, in order of first appearance, each
    (kind, value) once.

    Not claimed: ordered-list numbers, link targets, words that only open a sentence
    ("Install the package"), the words of headings (their numbers and dates are).
    Asked for numbers and dates only, the passes after theirs (names, acronyms) are
    skipped: the claims are the same as those of every kind, filtered.
    """
    kinds = frozenset(kinds)
    if len(text) <= _REMEMBERED_CHARS:
        return list(_remembered_claims(text, kinds))
    return _claims(text, kinds)


# A compile asks for the claims of one sentence several times (an extraction's statement
# is checked against its source, its dated facts restored, then checked again in the
# article written from it): of 523 look-ups compiling 38 decision records, 286 were
# repeats. Short texts only, so that the cache never holds a whole large material.
_REMEMBERED_CHARS = 2_000


@functools.lru_cache(maxsize=4096)
def _remembered_claims(text: str, kinds: frozenset[str]) -> tuple[Claim, ...]:
    return tuple(_claims(text, kinds))


def forget_claims() -> None:
    """Empty the claims remembered (see support.forget_remembered, which a compile run
    starts with)."""
    _remembered_claims.cache_clear()


def _claims(text: str, kinds: frozenset[str]) -> list[Claim]:
    text = normalise(text)
    digits = _DIGIT.search(text) is not None
    if not digits and not set(kinds) - _DIGIT_KINDS:
        return []
    found: list[tuple[int, Claim]] = []
    work = _LINK_TARGET.sub(lambda m: "]" + " " * (len(m.group(0)) - 1), text)
    work = _LIST_MARK.sub(lambda m: " " * len(m.group(0)), work)
    work = _CODE_FENCE.sub(lambda m: m.group(1) + " " * len(m.group(2)), work)
    # Each pass finds claims in what earlier passes left, then blanks what it found.
    spans: list[tuple[int, int]] = []

    def claim(kind: str, start: int, end: int, value: str | None) -> None:
        if value:
            found.append((start, Claim(kind, text[start:end], value)))
        spans.append((start, end))

    def masked() -> str:
        out = _blank(work, spans)
        spans.clear()
        return out

    if "://" in work:
        for m in _URL.finditer(work):
            claim("identifier", m.start(), m.end(), m.group(0).lower())
        work = masked()
    if "`" in work:
        for m in _INLINE_CODE.finditer(work):
            inner = m.group(1).strip()
            claim("identifier", m.start(), m.end(), inner.lower() if len(inner) > 1 else None)
        work = masked()
    if digits:
        for kind, pattern in _date_patterns(text):
            for m in pattern.finditer(work):
                claim("date", m.start(), m.end(), _date_value(kind, m))
            work = masked()
        for m in _UNIT_NUMBER.finditer(work):  # 20GB, 5ms, 3rd, 364.6公里: the number
            value = None if _ORDINAL.match(m.group(0)) else number_value(m.group(1))
            claim("number", m.start(1), m.end(1), value)
            spans.append((m.start(), m.end()))
        work = masked()
    for m in _JOINED.finditer(work):  # a file, a module, a path, a version with letters
        token = m.group(0)
        if token.lower().rstrip(".") in _ABBREVIATIONS or re.fullmatch(r"\d+\.\d+", token):
            continue  # 364.6 is a number; 3.11.2 (a version) is an identifier
        claim("identifier", m.start(), m.end(), token.lower())
    work = masked()
    if digits:
        for m in _TOKEN.finditer(work):  # letters and digits together: v2, S3, ADR-0012
            token = m.group(0)
            if _DIGIT.search(token) and re.search(r"[A-Za-z]", token):
                claim("identifier", m.start(), m.end(), token.lower())
        work = masked()
        for m in _NUMBER.finditer(work):
            claim("number", m.start(), m.end(), number_value(m.group(0)))
        work = masked()
    if not set(kinds) - _DIGIT_KINDS:  # (every later pass finds names and identifiers)
        return _in_order(found, kinds)
    for m in _INNER_CAPS.finditer(work):
        claim("name", m.start(), m.end(), m.group(0).lower())
    work = masked()
    for m in _ACRONYM.finditer(work):
        claim("identifier", m.start(), m.end(), m.group(0).lower())
    work = masked()
    found += _names(text, work)
    return _in_order(found, kinds)


def _in_order(found: list[tuple[int, Claim]], kinds: Collection[str]) -> list[Claim]:
    """The claims found (at their offsets) of these kinds, in order, each once."""
    seen: set[tuple[str, str]] = set()
    out = []
    for _, c in sorted(found, key=lambda p: p[0]):
        if c.kind in kinds and (c.kind, c.value) not in seen:
            seen.add((c.kind, c.value))
            out.append(c)
    return out


_DIGIT = re.compile(r"\d")
_DIGIT_KINDS = frozenset(("date", "number"))
# A month's name as a whole word: what a date written with one needs ("decided" is none).
_MONTH_WORD = re.compile(
    r"\b(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b",
    re.I,
)


def _date_patterns(text: str) -> list[tuple[str, re.Pattern[str]]]:
    """The date patterns worth trying on ``text`` (month names and CJK dates only where
    such words occur: most of the cost of a claim search on long material)."""
    months = _MONTH_WORD.search(text) is not None
    cjk = "年" in text or "月" in text
    return [
        (kind, pattern)
        for kind, pattern in _DATE_PATTERNS
        if (kind not in ("dmy", "mdy") or months) and (kind not in ("cjk", "cjk_md") or cjk)
    ]


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span replaced by as many spaces (offsets stay the same)."""
    if not spans:
        return text
    pieces, pos = [], 0
    for start, end in sorted(spans):
        if start < pos:
            start = pos
        pieces += [text[pos:start], " " * max(end - start, 0)]
        pos = max(pos, end)
    pieces.append(text[pos:])
    return "".join(pieces)


_HEADING_LINE = re.compile(r"^[ \t]*#{1,6}[ \t].*$", re.M)
_CAPITALISED = re.compile(r"(?<![\w'’-])[A-ZÀ-ÖØ-Þ][\w'’-]*")


def _names(text: str, work: str) -> list[tuple[int, Claim]]:
    """Runs of capitalised words that do not open a sentence, outside headings."""
    work = _HEADING_LINE.sub(lambda m: " " * len(m.group(0)), work)
    starts = _sentence_starts(work)
    out: list[tuple[int, Claim]] = []
    run: list[re.Match[str]] = []

    def flush() -> None:
        words = run[1:] if run and run[0].start() in starts else list(run)
        words = [w for w in words if _word_value(w.group(0)) not in _NOT_NAMES]
        if words:
            start, end = words[0].start(), words[-1].end()
            value = " ".join(_word_value(w.group(0)) for w in words)
            out.append((start, Claim("name", text[start:end], value)))
        run.clear()

    for m in _CAPITALISED.finditer(work):
        if m.group(0).lower().rstrip(".") in MONTHS:
            flush()
            continue
        gap = work[run[-1].end() : m.start()] if run else ""
        if run and (gap.strip() or "\n" in gap):  # a word or a line between: a new run
            flush()
        run.append(m)
    flush()
    return out


def _word_value(word: str) -> str:
    word = word.lower().strip("'’-")
    return re.sub(r"['’]s$", "", word)


def material_numbers(text: str) -> set[str]:
    """Every number ``text`` states, as digits or as a word ("two", "十"), canonical."""
    text = normalise(text)
    # each spelling converted once (a large material writes the same numbers often)
    raw = set(_NUMBER.findall(text))
    raw.update(m[0] for m in _UNIT_NUMBER.findall(text))
    raw.update(_DIGITS.findall(text))  # digits inside identifiers, dates
    values = {v for r in raw if (v := number_value(r))}
    values |= _number_words(text.lower())
    values |= {v for c, v in CJK_NUMERALS.items() if c in text}
    return values


def _number_words(low: str) -> set[str]:
    """The values of the number words of ``low`` (lower case), each a whole word: a tens
    word and a unit joined by one space or hyphen are one number ("twenty one" is 21,
    not 20 and 1), any other is its own. (Read from the set of its words, not with one
    pattern of every number word: that cost a large material seconds.)"""
    words = set(_WORD_RUN.findall(low))
    single = words & _SINGLE_NUMBER_WORDS
    values: set[str] = set()
    if single & _TENS_WORDS and single & _UNIT_WORDS:
        joined: Counter[str] = Counter()  # how often each word is part of a joined number
        for m in _JOINED_NUMBER.finditer(low):
            values.add(NUMBER_WORDS[m.group(0)])
            joined.update((m.group(1), m.group(2)))
        if joined:  # a word counts alone when it is also written outside a joined number
            alone = Counter(w for w in _WORD_RUN.findall(low) if w in joined)
            single = {w for w in single if alone[w] > joined[w] or w not in joined}
    values |= {NUMBER_WORDS[w] for w in single}
    return values


_DIGITS = re.compile(r"\d+(?:\.\d+)?")


def material_dates(text: str) -> set[str]:
    """Every date ``text`` states (ISO, or --MM-DD without a year), with its month and year."""
    text = normalise(text)
    out: set[str] = set()
    if not _DIGIT.search(text):
        return out
    for kind, pattern in _date_patterns(text):
        seen: set[str] = set()  # (a date written again has the same value)
        for m in pattern.finditer(text):
            if m.group(0) in seen:
                continue
            seen.add(m.group(0))
            value = _date_value(kind, m)
            if not value:
                continue
            out.add(value)
            if not value.startswith("--"):
                out.add(value[:7])
                out.add(value[:4])
                if len(value) == 10:
                    out.add("--" + value[5:])
    return out
