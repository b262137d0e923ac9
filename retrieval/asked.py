"""What a question asks for, and whether the sentences that would answer it hold it.

Three checks that term overlap cannot make (retrieval/coverage.py runs them on the
sentences of the pages read that hold most of the question):

- the kind of answer: "who" wants a person named, "when" a date or a year, "how many"
  a number: a sentence that holds the question's words but no name, date or number
  beyond the question's own does not answer it ("Who is the on-call engineer?" is not
  answered by "An engineer reviewed the jobs table.");
- names: a question's name of several words ("Big Fish", "Tim Burton") must be written
  together on a page read, not only its words apart;
- Chinese and Japanese questions: their bigrams across word boundaries (成渝高铁: 渝高)
  are on no page; ``straddling`` tells those from a word that is missing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from kb_ai.grounding import extract_claims
from retrieval.terms import terms
from wiki.words import _CJK_STOP_CHARS, CJK_RUN, CJK_STOP_BIGRAMS, STOP_WORDS, fold, tokens

_KANA = re.compile(r"[\u3040-\u309f]")
_PERSON = re.compile(r"\b(?:who|whom|whose)\b|谁", re.I)
_TIME = re.compile(
    r"\bwhen\b|\b(?:what|which)\s+(?:year|decade|century|month|day|date)\b|\bhow long ago\b|"
    r"什么时候|哪一?年|何时|哪一?天|几月|什么时间",
    re.I,
)
_NUMBER = re.compile(
    r"\bhow\s+(?:many|much|long|far|old|big|tall|large|high|deep|wide|heavy|often)\b|"
    r"多少|多长|多大|多高|多重|多远|几[个年月天次位名种座条届岁]",
    re.I,
)
# A choice between what the question names ("Who was born first, A or B?"): its answer
# is in the question.
_CHOICE = re.compile(r"\bor\b|还是", re.I)
_YEAR = re.compile(
    r"\b(?:1[0-9]{3}|20[0-9]{2})s?\b|\d+\s*[年月日]|[一二三四五六七八九十〇零]+[年月]"
)
_MONTHS = re.compile(
    r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b|\bcentur(?:y|ies)\b|"
    r"\b\d{4}-\d{2}(?:-\d{2})?\b",
    re.I,
)
# "When?" is also answered by a time of day, a weekday, a period or an event before/after
_WHEN = re.compile(
    r"\b\d{1,2}[:.]\d{2}\b|\b\d{1,2}\s?[ap]\.?m\b|\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b|"
    r"\b(?:daily|nightly|weekly|monthly|yearly|annually|weekdays?|weekends?|tonight|today|"
    r"yesterday|tomorrow|morning|evening|night|before|after|during|until|since|ago|when|"
    r"spring|summer|autumn|fall|winter|season|era|period|age|war|reign)\b|"
    r"[前后时期间代]",
    re.I,
)
_DIGIT = re.compile(r"\d|[一二三四五六七八九十百千万亿两]")
_NUMBER_WORDS_TEXT = (
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy "
    "eighty ninety hundred thousand million billion dozen single double twice once "
    "half several"
)
_NUMBER_WORDS = frozenset(_NUMBER_WORDS_TEXT.split())
# Who is answered by a team or a role's holders as often as by a name; a code span
# (`release-approvers`) names one too.
_GROUP = re.compile(
    r"`[^`]+`|\b(?:teams?|group|department|committee|board|squad|owners?|lead|staff|"
    r"council|office|crew)\b",
    re.I,
)
_CAPITAL = re.compile(r"\b[A-Z][\w'’.-]*")
# A name of several words: capitalised words in a row, anywhere but at the start.
_PHRASE = re.compile(r"(?<!^)(?<![.?!] )\b[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)+")


def asks_choice(question: str) -> bool:
    """Whether the question asks to choose between what it names ("A or B?")."""
    return bool(_CHOICE.search(question))


def answer_kind(question: str, *, leading: bool = False) -> str:
    """The kind of answer asked for: "person", "time", "number", or "" (what, which,
    why, how...). ``leading``: only when an English question opens with it ("Why X, and
    who owns it?" asks more than a name)."""
    if asks_choice(question):
        return ""
    if leading and not CJK_RUN.search(question):
        question = " ".join(question.split()[:3])
    if _NUMBER.search(question):
        return "number"
    if _TIME.search(question):
        return "time"
    if _PERSON.search(question):
        return "person"
    return ""


def holds_kind(kind: str, sentence: str, question: str) -> bool:
    """Whether ``sentence`` holds an answer of ``kind`` that the question does not hold
    already (a person's name, a date, a number)."""
    if kind == "person":
        if CJK_RUN.search(sentence):
            return True  # no capitals to tell a name by
        asked = terms(question)
        if any(terms(m.group()) - asked for m in _GROUP.finditer(sentence)):
            return True  # "signed off by the platform team": a team answers a who too
        return any(
            (word := m.group().strip("'’.-")).casefold() not in STOP_WORDS
            and not terms(word) <= asked
            for m in _CAPITAL.finditer(sentence)
        )
    if kind == "time":
        found = [m.group() for r in (_YEAR, _MONTHS, _WHEN) for m in r.finditer(sentence)]
        return any(f not in question for f in found)
    if kind == "number":
        if any(w in _NUMBER_WORDS for w in re.findall(r"[a-z]+", sentence.casefold())):
            return True
        return any(
            m.group() not in question
            for m in re.finditer(r"\d+|[^\W\d_]", sentence)
            if _DIGIT.match(m.group())
        )
    return True


def phrases(question: str) -> list[str]:
    """The question's names of several words, as the pages would write them."""
    return [" ".join(m.group().split()) for m in _PHRASE.finditer(question)]


def phrase_missing(question: str, texts: Iterable[str]) -> list[str]:
    """The question's names of several words no text writes whole (case and spacing aside)."""
    wanted = phrases(question)
    if not wanted:
        return []
    folded = [" ".join(fold(t).casefold().split()) for t in texts]
    out = []
    for name in wanted:
        key = re.sub(r"['’]s?$", "", fold(name).casefold())  # James Woods', Nolan's
        if not any(key in t for t in folded):
            out.append(name)
    return out


def straddling(question: str, have: set[str]) -> set[str]:
    """The question's CJK bigrams that straddle two words: both bigrams beside it are
    held (or are function words), so the bigram itself is the seam, not a missing word."""
    out: set[str] = set()
    for token in tokens(question):
        if not CJK_RUN.match(token) or len(token) < 4:
            continue
        pairs = [token[i : i + 2] for i in range(len(token) - 1)]

        def ok(pair: str) -> bool:  # held, or a function word's seam (在哪, 的)
            return (
                pair in have
                or pair in CJK_STOP_BIGRAMS
                or bool(_KANA.search(pair))
                or any(ch in _CJK_STOP_CHARS for ch in pair)
            )

        for i in range(1, len(pairs) - 1):
            if ok(pairs[i - 1]) and ok(pairs[i + 1]):
                out.add(pairs[i])
    return out


def lacking_kind(question: str, sentences: Sequence[str]) -> str:
    """What the answering ``sentences`` lack of the answer's kind ("" when not)."""
    kind = answer_kind(question)
    if not kind or not sentences or any(holds_kind(kind, s, question) for s in sentences):
        return ""
    return {"person": "a person's name", "time": "a date", "number": "a number"}[kind]


_UNIT = r"(?:\s?(?:[%％]|[^\W\d_]{1,12}))?"
_NUMBER_VALUE = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*" + _UNIT)
_CJK_NUMBER_VALUE = re.compile(r"\d+(?:\.\d+)?[\u4e00-\u9fff]{0,2}")
_A_YEAR = re.compile(r"1[0-9]{3}|20[0-9]{2}")


def lead_value(question: str, sentence: str) -> str:
    """The one number or date the question asks for that ``sentence`` states beyond the
    question ("15 minutes", "2026"), written as the sentence writes it; "" when it
    states none or several, or the question asks for anything else (then no lead is
    safe)."""
    kind = answer_kind(question, leading=True)
    if not kind:
        return ""
    asked = terms(question)
    if kind == "number":
        pattern = _CJK_NUMBER_VALUE if CJK_RUN.search(sentence) else _NUMBER_VALUE
        given = set(re.findall(r"\d+(?:[.,]\d+)*", question))
        found = []
        for m in pattern.finditer(sentence):
            value = m.group().strip()
            number = re.match(r"\d+(?:[.,]\d+)*", value).group()
            unit = value[len(number) :].strip()
            if number in given or _A_YEAR.fullmatch(number) or unit[:1] in ("年", "月", "日"):
                continue  # the question's own number, or a date: not a quantity
            found.append(value)
        found = list(dict.fromkeys(found))
        return found[0] if len(found) == 1 else ""
    if kind != "time":
        return ""  # a person: a capitalised word is not safely a name ("Anyone may...")
    found = [c.text for c in extract_claims(sentence, ("date",))]
    fresh = [f for f in dict.fromkeys(found) if not terms(f) <= asked]
    return fresh[0] if len(fresh) == 1 else ""
