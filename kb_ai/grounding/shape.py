"""The shape of a model's text: sentences, repetition, where it ends, HTML in place of
Markdown.

Pure functions over strings; nothing here calls a model or touches a file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A sentence ends at . ! ? (or their CJK forms) followed by a space, a closing mark or
# the end; CJK full stops need no space after them.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]*_`]*\s+|(?<=[。！？；])")
# The same without the CJK stops, for a line that has none: the zero-width alternative is
# tried at every position, and most lines are not CJK (a third of the split's time).
_LATIN_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]*_`]*\s+")
_CJK_STOPS = "。！？；"
_CLOSERS = "\"'”’)]*_`»」』"
_TERMINAL = tuple(".!?。！？…")
_FENCE = re.compile(r"^\s*(```|~~~)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_HEADING = re.compile(r"^\s*#{1,6}\s")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (each line of a list, table or heading is one)."""
    out: list[str] = []
    for block in split_paragraphs(text):
        for line in block.split("\n") if _is_structured(block) else [block.replace("\n", " ")]:
            body = _LIST_ITEM.sub("", line).strip()
            if _FENCE.match(body):
                continue
            ends = _SENTENCE_END if any(c in body for c in _CJK_STOPS) else _LATIN_SENTENCE_END
            out += [s.strip() for s in ends.split(body) if s and s.strip()]
    return out


def split_paragraphs(text: str) -> list[str]:
    """Blocks of ``text`` separated by blank lines, stripped, without the empty ones."""
    return [p.strip() for p in re.split(r"\n\s*\n", text.replace("\r\n", "\n")) if p.strip()]


def _is_structured(block: str) -> bool:
    first = block.lstrip().split("\n", 1)[0]
    return bool(_LIST_ITEM.match(first) or _HEADING.match(first) or _TABLE_ROW.match(first)) or (
        "\n" in block and any(_LIST_ITEM.match(ln) for ln in block.split("\n"))
    )


def _key(text: str) -> str:
    """What makes two passages the same: words and digits, lower case, spacing ignored."""
    return " ".join(re.findall(r"[^\W_]+", text.lower()))


@dataclass(frozen=True)
class Repeat:
    """A passage that occurs more than once: ``kind`` is "paragraph" or "sentence"."""

    kind: str
    text: str
    count: int

    def describe(self) -> str:
        shown = self.text if len(self.text) <= 80 else self.text[:77] + "..."
        return f"{self.kind} repeated {self.count} times: {shown!r}"


def find_repetition(text: str, *, min_chars: int = 24, baseline: str = "") -> list[Repeat]:
    """Paragraphs and sentences of at least ``min_chars`` that occur more than once, and
    more often than in ``baseline`` (the material: what it says twice may be said twice).

    Short ones ("Yes.", a heading like "## Notes") may repeat legitimately and are not
    counted. A repeated paragraph is reported once, not again for each of its sentences.
    """
    found: list[Repeat] = []
    seen: set[str] = set()
    for kind, split in (("paragraph", split_paragraphs), ("sentence", split_sentences)):
        counts: dict[str, list[str]] = {}
        for part in split(text):
            key = _key(part)
            if len(key) >= min_chars and not _FENCE.match(part):
                counts.setdefault(key, []).append(part)
        repeated = {key for key, group in counts.items() if len(group) > 1}
        allowed: dict[str, int] = {}  # (the baseline is read only for what text repeats)
        for part in split(baseline) if baseline and repeated else []:
            key = _key(part)
            if key in repeated:
                allowed[key] = allowed.get(key, 0) + 1
        for key, group in counts.items():
            if len(group) > max(1, allowed.get(key, 0)) and not any(key in s for s in seen):
                found.append(Repeat(kind, group[0], len(group)))
                seen.add(key)
    return found


def ends_on_sentence(text: str) -> bool:
    """Whether ``text`` ends where a writer would stop: a sentence's end mark, or the end
    of a heading, list item, table row or code block (a cut mid-word does not)."""
    lines = [ln.rstrip() for ln in text.rstrip().split("\n")]
    if not lines or not lines[-1].strip():
        return False
    last = lines[-1].strip()
    if _FENCE.match(last):
        return sum(1 for ln in lines if _FENCE.match(ln)) % 2 == 0
    if _HEADING.match(last) or _TABLE_ROW.match(last):
        return True
    stripped = last.rstrip(_CLOSERS).rstrip()
    if stripped.endswith(_TERMINAL):
        return True
    # A list item may end without a full stop ("- Redis 7"), but not on a word cut short
    # or a dangling connective.
    if _LIST_ITEM.match(last):
        return bool(stripped.split()) and not _DANGLING_WORD.search(stripped)
    return False


_CONNECTIVES = (
    r"\b(?:a|an|the|and|or|but|of|to|in|on|for|with|by|at|from|is|are|was|were|"
    r"that|which|who|its|their|our|his|her)|\w['’]s"
)
_DANGLING_WORD = re.compile(rf"(?:{_CONNECTIVES}|[,;(&\-–—])$", re.I)


def fit_sentences(text: str, limit: int) -> str | None:
    """``text`` on one line if it is whole and within ``limit`` characters, else the
    longest run of its leading whole sentences that fits, or None when not even the
    first sentence fits (then ask for a shorter one).

    Never cuts inside a sentence. A sentence ends with its full stop (or ! ? …, or a
    CJK end mark): text without one may have been cut ("Traditionally we had 4 mo"),
    so it does not count as a sentence.
    """
    flat = " ".join(text.split())
    if not flat:
        return None
    if len(flat) <= limit and flat.rstrip(_CLOSERS).endswith(_TERMINAL):
        return flat
    kept = ""
    for sentence in _SENTENCE_END.split(flat):
        sentence = sentence.strip()
        if not sentence:
            continue
        joiner = "" if not kept or kept.endswith(("。", "！", "？", "；")) else " "
        candidate = kept + joiner + sentence
        if len(candidate) > limit or not sentence.rstrip(_CLOSERS).endswith(_TERMINAL):
            break
        kept = candidate
    return kept or None
