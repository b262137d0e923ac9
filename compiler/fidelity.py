"""Fidelity: an extraction checked against the source text it came from.

The extract stage's reply is the material every article is later written from, so what
it drops or changes is lost for good. Before it is stored:

- repeats are dropped: a list item said again (in other case or spacing), an item that
  repeats one phrase over and over; the extraction says what was dropped;
- a list of the source itself (a Markdown list) that the model cut short is completed
  from the source, verbatim and in order;
- statements with a number or date the source does not state, or that turn one of its
  negations around ("needs no persistence" -> "needs persistence"), are removed;
- a source sentence with a date or number the extraction lost is kept as a fact, as
  written (the date with the fact it dates), up to a bound; past it, the extraction
  says how many were left out;
- when a fact held is kept only if the source states that date, and what it is about
  only if the source states every name, number and date in it (else the writer would
  date a fact, or learn a name, from the model alone).

Every change is said in the extraction's ``notes``, which the writer sees.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Protocol

from compiler._containment import contained
from kb_ai.grounding import Evidence, Negations, fit_sentences, normalise, split_sentences


class Extraction(Protocol):
    """What these checks read and change of a compiler.extract.Extraction (named here
    rather than imported: extract calls these checks)."""

    summary: str
    topics: list[str]
    decisions: list[dict[str, str]]
    facts: list[str]
    enumerations: list[dict[str, Any]]
    conventions: list[str]
    notes: list[str]
    fact_context: dict[str, tuple[str, str]]

    def to_markdown(self) -> str: ...


#: Source sentences with a lost date or number added back per chunk of a source, at most.
MAX_RESTORED = 12
_CHECKED = frozenset(("date", "number"))
_DIGIT = re.compile(r"\d")
_LIST_LINE = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+(.+?)\s*$")
_REPEATED_PHRASE = re.compile(r"(\b(?:\w+\W+){2,8}?)\1{2,}", re.U)
_WORDS = re.compile(r"\w+")


def check_extraction(
    ex: Extraction, source: str, *, chunks: int = 1, restore: bool = True
) -> Extraction:
    """``ex`` made faithful to ``source`` (changed in place and returned), with notes.

    ``restore`` False (a transcript, mostly tool output): nothing is added back from
    the source, only repeats and unfaithful statements are removed."""
    evidence = Evidence(source)  # (indexed once: a large source's cost)
    _drop_repeats(ex)
    if restore:
        _complete_lists(ex, source)
    _remove_unfaithful(ex, source, evidence)
    _whole_summary(ex, source)
    if restore:
        _restore_dated(ex, source, MAX_RESTORED * max(chunks, 1))
    _ground_context(ex, evidence)
    return ex


def _key(text: str) -> str:
    return " ".join(re.findall(r"[^\W_]+", normalise(text).lower()))


def _dedupe(items: list[str]) -> tuple[list[str], int]:
    seen: set[str] = set()
    out = []
    for item in items:
        m = _REPEATED_PHRASE.search(item) if _may_repeat(item) else None
        if m:  # "the cache the cache the cache ...": keep the phrase once
            item = item[: m.start()] + m.group(1) + item[m.end() :]
        key = _key(item)
        if key and key not in seen:
            seen.add(key)
            out.append(item.strip())
    return out, len(items) - len(out)


def _may_repeat(item: str) -> bool:
    """Whether ``item`` may repeat a phrase (``_REPEATED_PHRASE``): some word, whole, is
    said again two to eight words later and as far again (the phrase's first word, in
    each of its three times). A look at the words; the pattern costs far more."""
    words = _WORDS.findall(item)
    if len(words) < 6:
        return False
    for word, n in Counter(words).items():
        if n >= 3:
            at = {i for i, w in enumerate(words) if w == word}
            if any(i + k in at and i + 2 * k in at for i in at for k in range(2, 9)):
                return True
    return False


def _drop_repeats(ex: Extraction) -> None:
    dropped = 0
    for name in ("facts", "conventions", "topics"):
        kept, n = _dedupe(getattr(ex, name))
        setattr(ex, name, kept)
        dropped += n
    for enum in ex.enumerations:
        enum["items"], n = _dedupe(enum["items"])
        dropped += n
    if dropped:
        ex.notes.append(f"{dropped} repeated item(s) were dropped from the model's lists")


def _source_lists(source: str) -> list[list[str]]:
    """Each Markdown list of the source: its top-level items, in order."""
    lists: list[list[str]] = []
    current: list[str] = []
    indent: int | None = None
    for line in source.splitlines():
        m = _LIST_LINE.match(line)
        if m and (indent is None or len(m.group(1)) <= indent):
            indent = len(m.group(1)) if indent is None else indent
            current.append(m.group(2))
        elif m:  # a nested item: part of its parent
            continue
        elif line.strip():
            if current:
                lists.append(current)
            current, indent = [], None
    if current:
        lists.append(current)
    return [lst for lst in lists if len(lst) > 1]


def _complete_lists(ex: Extraction, source: str) -> None:
    """Each enumeration the model cut short of a source list (the list holding the most
    of its items, the first of equals; when it holds at least half of them) is that list.

    The source's items are indexed once and each of the model's items is looked up
    (compiler._containment): comparing each enumeration with each list cost a large
    source minutes."""
    lists = _source_lists(source)
    if not lists or not ex.enumerations:
        return
    owners: dict[str, list[int]] = {}  # a source item's key -> its lists, once per time in each
    for li, lst in enumerate(lists):
        for item in lst:
            owners.setdefault(_key(item), []).append(li)
    haves = [{_key(i) for i in enum["items"]} for enum in ex.enumerations]
    same = _same_items(list(owners), list(set().union(*haves)))
    for enum, have in zip(ex.enumerations, haves, strict=True):
        hits: Counter[int] = Counter()
        for key in set().union(*(same.get(h, ()) for h in have)):
            hits.update(owners[key])
        if not hits:
            continue
        best_hits = max(hits.values())
        best = lists[min(li for li, n in hits.items() if n == best_hits)]
        if best_hits * 2 < len(enum["items"]):
            continue
        missing = len(best) - best_hits
        if missing > 0:
            enum["items"] = list(best)
            label = enum["name"] or "a list"
            ex.notes.append(
                f"{label}: {missing} item(s) the model left out were restored from the source"
            )


def _same_items(source_keys: list[str], model_keys: list[str]) -> dict[str, set[str]]:
    """Each of the model's item keys -> the source item keys that count as the same
    item: the same key, or one inside the other when both have at least 12 characters
    (an item shortened or lengthened a little)."""
    known = set(source_keys)
    same = {h: {h} if h in known else set() for h in model_keys}
    long_source = [k for k in source_keys if len(k) >= _LONG_ITEM]
    long_model = [h for h in model_keys if len(h) >= _LONG_ITEM]
    for i, j in contained(long_source, long_model, _LONG_ITEM):
        same[long_model[j]].add(long_source[i])
    for i, j in contained(long_model, long_source, _LONG_ITEM):
        same[long_model[i]].add(long_source[j])
    return same


_LONG_ITEM = 12  # characters of an item key long enough to be matched inside another


def _remove_unfaithful(ex: Extraction, source: str, evidence: Evidence) -> None:
    negations = Negations(source)

    def bad(text: str) -> bool:
        if _DIGIT.search(text) and evidence.unsupported(text, _CHECKED):
            return True  # (numbers and dates are written with digits)
        return bool(negations.flips(text))

    removed = 0
    sentences = split_sentences(ex.summary)
    kept = [s for s in sentences if not bad(s)]
    if len(kept) < len(sentences):
        removed += len(sentences) - len(kept)
        ex.summary = " ".join(kept) or _first_sentence(source)
    before = len(ex.facts)
    ex.facts = [f for f in ex.facts if not bad(f)]
    removed += before - len(ex.facts)
    before = len(ex.decisions)
    ex.decisions = [d for d in ex.decisions if not bad(f"{d['what']} {d['why']}")]
    removed += before - len(ex.decisions)
    if removed:
        ex.notes.append(
            f"{removed} statement(s) were removed: a number or date the source does not "
            "state, or the opposite of what it says"
        )


def _ground_context(ex: Extraction, evidence: Evidence) -> None:
    """What a fact is about and when it held, kept where the source states it."""
    if not ex.fact_context:
        return
    dropped = 0
    for key, (about, held) in list(ex.fact_context.items()):
        if held and evidence.unsupported(held):
            held, dropped = "", dropped + 1
        # (after a word: a name opening the phrase would count as a sentence start)
        if about and evidence.unsupported(f"about {about}"):
            about, dropped = "", dropped + 1
        if about or held:
            ex.fact_context[key] = (about, held)
        else:
            del ex.fact_context[key]
    if dropped:
        ex.notes.append(
            f"{dropped} date(s) or subject(s) given to facts were dropped: the source does"
            " not state them"
        )


def _whole_summary(ex: Extraction, source: str) -> None:
    """A summary cut mid-sentence (at the reply's size bound) keeps its whole sentences."""
    flat = " ".join(ex.summary.split())
    whole = fit_sentences(flat, len(flat)) if flat else flat
    if whole == flat:
        return
    ex.summary = whole or _first_sentence(source)
    ex.notes.append("the summary stopped mid-sentence: its unfinished end was dropped")


def _restore_dated(ex: Extraction, source: str, limit: int) -> None:
    have = Evidence(ex.to_markdown(), kinds=_CHECKED)
    restored: list[str] = []
    cut = False
    for sentence in split_sentences(_prose(source)):
        if not _DIGIT.search(sentence):
            continue
        if not have.unsupported(sentence):
            continue
        if len(restored) == limit:  # (the rest is not looked at: a large source's cost)
            cut = True
            break
        restored.append(" ".join(sentence.split()))
        have.add(restored[-1])
    if restored:
        ex.facts += restored
        ex.notes.append(
            f"{len(restored)} source sentence(s) with a date or number the model left out "
            "were kept as written"
        )
    if cut:
        ex.notes.append(f"more sentences with a date or number were left out than the {limit} kept")


def _first_sentence(source: str) -> str:
    """The source's first sentence of prose, as written (a summary to fall back on)."""
    for paragraph in _prose(source).split("\n\n"):
        if paragraph.strip() and not _LIST_LINE.match(paragraph.strip().split("\n")[0]):
            sentences = split_sentences(paragraph)
            if sentences:
                return sentences[0][:400]
    return ""


def _prose(source: str) -> str:
    """The source without headings and code blocks (their numbers are not facts)."""
    text = re.sub(r"^(```|~~~).*?^\1[ \t]*$", "", source, flags=re.S | re.M)
    return re.sub(r"^\s*#{1,6}\s.*$", "", text, flags=re.M)
