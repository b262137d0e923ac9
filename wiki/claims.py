"""Claims an article makes that its sources can be checked for: numbers, dates, names.

A narrow, model-free check for `kb-ai lint`: a number, an ISO date or a capitalised name
in an article that appears in none of its sources' extractions is likely invented or
left behind by a source that no longer says it. Headings, code, link targets and the
first word of a sentence are not read (a sentence start is capitalised anyway), nor
are numbers below 10 (list steps, "2 options"), which would flag more than they catch.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

__all__ = ["Claim", "ClaimChecker", "body_claims"]

_DATE = re.compile(r"(?<![\w.-])\d{4}-(?:0[1-9]|1[0-2])(?:-(?:0[1-9]|[12]\d|3[01]))?(?![\w-])")
_NUMBER = re.compile(
    r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d])|(?<![\w.,])\d+(?:\.\d+)?(?!\d)"
)
_NAME = re.compile(r"(?<![\w'’-])(?:[A-Z][a-z]+(?:[A-Z][a-z]+)*|[A-Z][A-Z0-9]{1,})(?![\w'’-])")
_WORD = re.compile(r"[^\W_]+")
_CODE = re.compile(r"`[^`\n]*`")
_WIKILINK = re.compile(r"\[\[([^\]|\n]*)(?:\|([^\]\n]*))?\]\]")
_MDLINK = re.compile(r"(!?)\[([^\]\n]*)\]\([^)\n]*\)")
_URL = re.compile(r"https?://\S+")
_SENTENCE_END = re.compile(r"(?:^|[.!?:…]\s+|[-*+>|]\s+|\d+[.)]\s+|\(|\"|“|\*\*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_NOT_NAMES = frozenset(["I", "OK", "TODO", "NOTE", "FAQ"])


@dataclass(frozen=True)
class Claim:
    kind: str  # "number" | "date" | "name"
    text: str


def body_claims(body: str) -> list[Claim]:
    """The numbers, dates and names of ``body``, in order, each once."""
    seen: set[tuple[str, str]] = set()
    out: list[Claim] = []
    in_fence = False
    for line in body.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence or line.lstrip().startswith("#"):
            continue
        for claim in _line_claims(_readable(line)):
            key = (claim.kind, claim.text)
            if key not in seen:
                seen.add(key)
                out.append(claim)
    return out


def _readable(line: str) -> str:
    """The words of a line a reader sees: no code, link targets or URLs."""
    line = _CODE.sub(" ", line)
    line = _WIKILINK.sub(lambda m: m.group(2) or m.group(1), line)
    line = _MDLINK.sub(lambda m: m.group(2), line)
    return _URL.sub(" ", line)


def _line_claims(line: str) -> list[Claim]:
    claims: list[Claim] = []
    dated = [m.span() for m in _DATE.finditer(line)]
    claims += [Claim("date", m.group()) for m in _DATE.finditer(line)]
    for m in _NUMBER.finditer(line):
        if any(a <= m.start() < b for a, b in dated):
            continue
        value = m.group().replace(",", "")
        if "." in value or int(value) >= 10:
            claims.append(Claim("number", value))
    for m in _NAME.finditer(line):
        if m.group() in _NOT_NAMES or _SENTENCE_END.search(line[: m.start()]):
            continue
        claims.append(Claim("name", m.group()))
    return claims


class ClaimChecker:
    """The material of an article (its sources' extractions), ready to look claims up."""

    def __init__(self, *texts: str) -> None:
        joined = unicodedata.normalize("NFKC", "\n".join(texts))
        self.text = joined
        self.words = {w.casefold() for w in _WORD.findall(joined)}
        self.numbers = {m.group().replace(",", "") for m in _NUMBER.finditer(joined)}
        self.dates = {m.group() for m in _DATE.finditer(joined)}

    def supports(self, claim: Claim) -> bool:
        if claim.kind == "date":
            # a month (2026-03) is stated by any day of it
            return claim.text in self.dates or any(d.startswith(claim.text) for d in self.dates)
        if claim.kind == "number":
            return claim.text in self.numbers or claim.text in self.text
        word = claim.text.casefold()
        return word in self.words or word.rstrip("s") in self.words

    def unsupported(self, body: str) -> list[Claim]:
        """The claims of ``body`` this material does not state."""
        return [c for c in body_claims(unicodedata.normalize("NFKC", body)) if not self.supports(c)]
