"""Claims a reader can check: each cited claim of an answer with the place in the page
that supports it, and whether it does.

An answer's citations name a page; a reader wants the lines. :class:`Placer` reads the
answer as it is shown (after the checks of checks.py), takes the text since the last
citation as the claim that citation is for, finds the smallest run of the page's lines
holding most of the claim's terms, and rewrites the citation to point there:
``[Title](wiki/x/y.md#L12-L18)``, lines of the file as it is on disk (frontmatter
counted), which the web article page highlights.

Whether the span supports the claim is checked with kb_ai.grounding, as every answer
sentence is checked against the pages: at least half of the claim's meaningful terms in
the span, every name, number and date of the claim stated in it (or the page's title),
and no sentence stating as so what the span negates. The share of cited claims whose
span supports them is the answer's citation faithfulness.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kb_ai.grounding import Evidence, negation_flips
from retrieval.pages import Page
from retrieval.terms import terms
from wiki import normalise_article_path

__all__ = ["ClaimSpan", "Placer", "Span", "faithfulness", "find_span"]

_LINK = re.compile(r"\[([^\]\n]{1,300})\]\(([^)\s]{1,300})\)")
_WORDY = re.compile(r"[^\W_]", re.UNICODE)
MAX_SPAN_LINES = 8  # a claim is a sentence or a few; its place is a paragraph at most
# Each line a span takes beyond its first costs half a term: a line that holds most of
# the claim is a better place than a paragraph that holds one term more.
LINE_COST = 0.5
SUPPORTED_SHARE = 0.5
QUOTED_CHARS = 20  # a quote this long, word for word in one page, is cited by itself  # of the claim's terms in the span (checks.py asks the same of a page)


@dataclass(frozen=True)
class Span:
    """Lines ``start``..``end`` (1-based, inclusive, of the file) of ``path``."""

    path: str
    start: int
    end: int
    text: str

    @property
    def anchor(self) -> str:
        return f"#L{self.start}" if self.start == self.end else f"#L{self.start}-L{self.end}"

    def as_dict(self) -> dict[str, object]:
        return {"path": self.path, "start": self.start, "end": self.end, "text": self.text}


@dataclass(frozen=True)
class ClaimSpan:
    """One claim of an answer, the page it cites, the span found there, and whether
    that span supports the claim (False with no span: nothing there holds it)."""

    claim: str
    path: str
    span: Span | None
    supported: bool
    why: str = ""  # when not supported: what the span lacks

    def as_dict(self) -> dict[str, object]:
        return {
            "claim": self.claim,
            "path": self.path,
            "span": self.span.as_dict() if self.span else None,
            "supported": self.supported,
            "why": self.why,
        }


def faithfulness(claims: list[ClaimSpan]) -> float | None:
    """The share of cited claims whose span supports them; None with no cited claim."""
    if not claims:
        return None
    return round(sum(c.supported for c in claims) / len(claims), 3)


def _lines(page: Page) -> list[tuple[int, str]]:
    """The page's lines read, with their line numbers in the file (the cut marker out)."""
    out = []
    for i, line in enumerate(page.text.split("\n")):
        if line.startswith("[… cut here:"):
            break
        out.append((page.first_line + i, line))
    return out


def find_span(claim: str, page: Page) -> Span | None:
    """The run of at most MAX_SPAN_LINES lines of ``page`` holding the most of
    ``claim``'s terms, each line beyond the first costing LINE_COST of a term (the
    shortest, then the first, of equal worth); None when no line holds one."""
    want = terms(claim)
    if not want:
        return None
    lines = _lines(page)
    line_terms = [terms(text) & want for _, text in lines]
    best: tuple[float, int, int] | None = None  # (-worth, length, start index)
    for i, first in enumerate(line_terms):
        if not first:
            continue  # a span starts on a line that holds something
        union: set[str] = set()
        for j in range(i, min(i + MAX_SPAN_LINES, len(lines))):
            union |= line_terms[j]
            if line_terms[j]:  # and ends on one
                key = (-(len(union) - LINE_COST * (j - i)), j - i, i)
                if best is None or key < best:
                    best = key
            if len(union) == len(want):
                break
    if best is None:
        return None
    length, i = best[1], best[2]
    chosen = lines[i : i + length + 1]
    text = "\n".join(t for _, t in chosen).strip()
    return Span(page.path, chosen[0][0], chosen[-1][0], text)


def check_span(claim: str, span: Span | None, title: str = "") -> str:
    """Why ``span`` does not support ``claim`` ("" when it does). ``title``: what the
    page says of itself, its title and date (an answer may say "As of 2026-03-20", the
    date of the page, which retrieval/dated.py may have from its source's file name)."""
    if span is None:
        return "no line of the page holds the claim's terms"
    want = terms(claim)
    have = terms(f"{title}\n{span.text}")
    if want and len(want & have) / len(want) < SUPPORTED_SHARE:
        return "the span holds under half of the claim's terms"
    missing = Evidence(title, span.text).unsupported(claim)
    if missing:
        return "the span does not state " + ", ".join(f"{c.kind} {c.text!r}" for c in missing[:3])
    if flips := negation_flips(claim, span.text):
        return flips[0].describe()
    return ""


def _anchor(spans: list[Span]) -> str:
    """The place of a citation standing for ``spans``: the lines from the first to the
    last when they lie within 2 x MAX_SPAN_LINES, else the first span's."""
    if not spans:
        return ""
    start, end = min(s.start for s in spans), max(s.end for s in spans)
    if end - start < 2 * MAX_SPAN_LINES:
        return f"#L{start}" if start == end else f"#L{start}-L{end}"
    return min(spans, key=lambda s: s.start).anchor


def _plain(text: str) -> str:
    """The claim's words: links out, and the stop left over from the sentence before."""
    return " ".join(_LINK.sub("", text).split()).lstrip(".,;:!?。，；：！？ ")


class Placer:
    """Gives each citation of an answer, as it is shown piece by piece, the place in its
    page that supports the claim before it, and records the claims."""

    def __init__(self, pages: list[Page]) -> None:
        self.by_path = {p.path: p for p in pages}
        self.claims: list[ClaimSpan] = []
        self.uncited: list[str] = []  # what was said with no citation after it
        self._run: list[str] = []  # what was said since the last citation, piece by piece
        self._last: list[str] = []  # the claims of the last citation (two cited in a row)
        self._shown: list[str] = []

    def feed(self, piece: str) -> str:
        """``piece`` with its citations pointing at their places."""
        out: list[str] = []
        at = 0
        for m in _LINK.finditer(piece):
            before = piece[at : m.start()]
            out.append(before)
            out.append(self._place(m, _plain(before)))
            at = m.end()
        out.append(piece[at:])
        if said := _plain(piece[at:]):
            self._run.append(said)
        self._shown.append(placed := "".join(out))
        return placed

    @property
    def text(self) -> str:
        """The answer as shown so far, with its places."""
        return "".join(self._shown).strip()

    def finish(self, *notices: str) -> None:
        """The end of the answer: text after the last citation is said uncited (kb-ai's
        own ``notices``, such as "part was left out", aside)."""
        rest = " ".join(self._run)
        for notice in notices:
            rest = rest.replace(" ".join(notice.split()), "")
        if _WORDY.search(rest):
            self.uncited.append(rest.strip())
        self._run = []

    def _place(self, m: re.Match[str], before: str) -> str:
        path = normalise_article_path(m.group(2))
        page = self.by_path.get(path)
        if page is None:  # not a page read (an outside link): as it was, in the run
            self._run += [before] if before else []
            return m.group(0)
        # A citation stands for its own sentence (the text before it in its piece); after
        # a citation-less run (a small model's quotes, one citation after the run) for
        # each sentence of the run, each a claim in its own place.
        if before:
            self.uncited += [" ".join(self._run)] if self._run else []
            claims = [before]
        else:
            claims = self._run or self._last
        self._run, self._last = [], claims
        if not claims:
            return m.group(0)
        spans = []
        for claim in claims:
            span = find_span(claim, page)
            why = check_span(claim, span, f"{page.title}\n{page.date}".strip())
            self.claims.append(ClaimSpan(claim, path, span, not why, why))
            spans += [span] if span else []
        return f"[{m.group(1)}]({path}{_anchor(spans)})"

    @property
    def faithfulness(self) -> float | None:
        return faithfulness(self.claims)
