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
from dataclasses import dataclass, replace

from retrieval.asked import lead_value
from retrieval.chunks import ABBREVIATIONS
from retrieval.dated import superseded
from retrieval.pages import Page
from retrieval.terms import terms
from wiki.words import CJK_RUN, fold, query_terms, words

MAX_PICKS = 4
MAX_SENTENCES = 160  # read from the pages, before the question filters them
MAX_OFFERED = 12  # offered to the model: the enum and the prompt stay small
MAX_SENTENCE_CHARS = 600
# A pick after the first is quoted only when the question's terms it adds (those no
# sentence quoted before holds) weigh at least this share of the best quoted sentence's
# terms, or it goes on the table or list of one quoted: a 0.5B model picks the first
# few ids, and the third was often "Sessions are kept in Redis." for "What is the
# session TTL now?". Set between the most a padding pick added on the example notes'
# questions (0.32 of the best) and the least a pick answering a question's second half
# added in tests/retrieval/test_extractive.py (0.45).
ADDS_SHARE = 0.4
NOT_COVERED = "The wiki does not cover this question."
# A word of the question only the headings a sentence sits under hold (its page's title
# first: a compiled page's sections are ## headings under it) weighs this much of one it
# holds itself. On the development sets of bench/ask/coverage.py (the stand-in quoting
# the first two offered; their pages have a title and no headings), right answers at
# the shipped threshold went 127 -> 129, 131, 131, 132, 133 and 121 at 0.25, 0.5, 0.75,
# 0.9, 1.0 and 1.5 ("He attended the district school and graduated from Hebron
# Academy." under "Charles Andrews (Maine politician)"), abstentions unchanged: a
# sentence is read with the headings above it as a list item is with its lead-in.
HEADING_WEIGHT = 1.0
TITLE_AS_HEADING = True

# A sentence ends at . ! or ? (or one closed by emphasis or a quote: "*Transcript of a
# chat.* The agent ...") and a space before a capital or a digit, unless the stop
# is an ellipsis (`SELECT ... FOR UPDATE`), ends an abbreviation ("e.g.", "Dr.") or an
# initial ("J. Smith"), or lies inside a code span (masked first). Chinese and Japanese
# sentences end at 。！？ with no space after them.
_SPLIT = re.compile(
    r"(?:(?<=[.!?])|(?<=[.!?][*_\"'”)]))\s+(?=[\"'“(\[*_]?[A-Z0-9])|(?<=[。！？])(?![”」』）)])\s*"
)
_ABBREVIATIONS = ABBREVIATIONS
# Abbreviations only before a number ("No. 5", "fig. 3"): "The team said no. Redis stays."
# is two sentences.
_BEFORE_NUMBER = frozenset(("no", "nos", "fig", "figs", "eq", "p", "pp", "vol", "art"))
_WORD_BEFORE = re.compile(r"([\w.]+)[.!?]$")
_CODE = re.compile(r"`[^`\n]+`")
# Transcript noise: {vocalsound}-style marks, and a speaker turn with no words after it.
_MARK = re.compile(r"\{[a-z_]{2,30}\}")
_EMPTY_TURN = re.compile(r"^(?:[\w .'-]{1,40}:\s*)+$")
# A speaker turn of a meeting transcript: "Project Manager: ...", "Amara: ...",
# "Speaker 2: ...". On a page read as a transcript (_is_transcript) each turn is a block
# of its own (its lines are not joined to the turn before, which may hold nothing but
# noise) and each of its sentences is quoted with its speaker.
_TURN = re.compile(r"^\s*([A-Z][\w'.&-]*(?: [A-Z][\w'.&-]*){0,3}|[A-Z][a-z]+ \d{1,3}):(?=\s|$)")
TURNS_MIN = 3
# A transcript's tokenised stops ("remote control , and ... Euro .") are tidied in a quote.
_SPACED_STOP = re.compile(r"\s+([.,;:!?])(?=\s|$)")
# A wiki link the compile put in a page ("the [[session-cache|session cache]] TTL"): a
# quote says its words, as the page shows them.
_WIKILINK = re.compile(r"\[\[([^\]|#\n]{1,200})(?:#[^\]|\n]*)?(?:\|([^\]\n]{1,200}))?\]\]")
_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_FENCE = re.compile(r"^\s*(```|~~~)")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")
# An ATX heading ("## Session cache TTL", closing #s dropped); "#hashtag" is not one.
_HEADING = re.compile(r"^(#{1,6})(?:\s+(.*?))?(?:\s+#+)?\s*$")
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
    header: tuple[str, ...] = ()  # a table row's header cells
    lead: str = ""  # a list item's lead-in
    marker: str = ""  # a list item's marker ("-", "4.")
    cells: tuple[str, ...] = ()  # a table row's cells, empty ones too
    date: str = ""  # its page's date
    history: tuple[Sentence, ...] = ()  # older pages' sentences on its fact (dated.py)
    # the question's terms it holds (with its header or lead-in), each with its weight:
    # its rarity among the sentences read, HEADING_WEIGHT of it for a term only the
    # headings it sits under hold (empty when offered without a question)
    weights: tuple[tuple[str, float], ...] = ()

    @property
    def shown(self) -> str:
        """The sentence as the pick prompt shows it: a table row with its columns."""
        if self.history:
            return f"{self.text} (as of {self.date})"
        if self.header:
            return f"{self.text} (columns: {' | '.join(self.header)})"
        return f"{self.lead} {self.text}" if self.lead else self.text


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
    found: list[tuple[float, int, Unit, Page]] = []
    for page in pages:
        for unit in units_of(page.text):
            if len(found) >= MAX_SENTENCES:
                break
            found.append((0.0, len(found), unit, page))
    if question is not None:
        # A word of the question few sentences have says more than one most have (the
        # page's own subject): hits weigh by their rarity among the sentences read. A
        # table row is read with its header, a list item with its lead-in, as they are
        # quoted (and as coverage.py reads them): "How do I roll back a release?" is
        # answered by the steps under "To roll back a release:", which do not say so.
        # A sentence is read under the headings it sits under too, its page's title first
        # ("It is now 15 minutes." under "## Session cache TTL"), their words weighing
        # HEADING_WEIGHT of its own; they are not quoted with it.
        wanted = query_terms(question)
        hits = []
        for _, i, u, page in found:
            own = _hits(" ".join([u.text, *u.header, u.lead]), wanted)
            above = _hits(" ".join(_section(u, page)), wanted) - own if HEADING_WEIGHT else set()
            hits.append((own, above, i, u, page))
        df = Counter(t for own, above, *_ in hits for t in own | above)
        n = len(hits)
        rarity = {t: math.log((n + 1) / (df[t] + 0.5)) for t in df}
        held = {
            i: tuple(sorted([(t, rarity[t]) for t in own]
                            + [(t, HEADING_WEIGHT * rarity[t]) for t in above]))
            for own, above, i, _, _ in hits
        }  # fmt: skip

        # Of sentences that weigh the same, those holding more of the question themselves
        # first: under a title that names the question every sentence of its page weighs
        # the same, and the first few in page order held none of its words (the judge,
        # shown the best four, then found none that answers).
        own_weight = {i: sum(rarity[t] for t in own) for own, _, i, _, _ in hits}
        found = sorted(
            ((-sum(w for _, w in held[i]), i, u, page) for own, above, i, u, page in hits
             if own or above),
            key=lambda f: (f[0], -own_weight[f[1]], f[1]),
        )  # fmt: skip
    # A sentence an older dated page states otherwise than a newer one is not offered on
    # its own: it is quoted after the newer one, as its history (dated.py).
    later: dict[int, int] = {}
    if question is not None:
        items = [(u.text, page.path, page.date) for _, _, u, page in found]
        later = superseded(items, terms(question))
    else:
        limit = len(found)
    out: list[NumberedPage] = []
    for k, (_, _, u, page) in enumerate(found):
        if k in later or len(out) >= limit:
            continue
        history = tuple(
            _sentence("", found[j][2], found[j][3]) for j in sorted(later) if later[j] == k
        )
        s = replace(_sentence(f"s{len(out) + 1}", u, page), history=history)
        if question is not None:
            s = replace(s, weights=held[found[k][1]])
        out.append(NumberedPage(page.path, page.title, [s]))
    return out


def _section(u: Unit, page: Page) -> tuple[str, ...]:
    """The headings a sentence sits under, its page's title first when TITLE_AS_HEADING
    (a compiled page's sections are ## headings under its title, not repeated)."""
    if TITLE_AS_HEADING and page.title and (not u.section or u.section[0] != page.title):
        return (page.title, *u.section)
    return u.section


def _sentence(id: str, u: Unit, page: Page) -> Sentence:
    return Sentence(
        id, u.text, page.path, page.title, u.header, u.lead, u.marker, u.cells, page.date
    )


def _hits(text: str, terms: Sequence) -> set[str]:
    """The question's words the sentence has (a stem prefix counts for its word; a
    Chinese or Japanese pair of characters counts where the sentence writes it: its
    words are whole runs, never equal to a pair)."""
    folded = fold(text).casefold()
    found = set(words(folded))
    hit = set()
    for t in terms:
        if CJK_RUN.match(t.text):
            if len(t.text) >= 2 and t.text in folded:
                hit.add(t.text)
            continue
        if (t.text in found) if not t.prefix else any(w.startswith(t.text) for w in found):
            hit.add(t.widens or t.text)
    return hit


@dataclass(frozen=True)
class Unit:
    """A sentence of a page with what it needs to be read alone: a table row's header
    cells, a list item's lead-in (the line before the list, ending with ":") and its
    list marker."""

    text: str
    header: tuple[str, ...] = ()
    lead: str = ""
    marker: str = ""
    cells: tuple[str, ...] = ()
    section: tuple[str, ...] = ()  # the headings it sits under, outermost first


def sentences_of(text: str) -> Iterator[str]:
    """The sentences of a page (see :func:`units_of`)."""
    return (u.text for u in units_of(text))


def units_of(text: str) -> Iterator[Unit]:
    """The sentences of a page: a paragraph or list item wrapped over several lines is
    joined first (notes are often hard-wrapped, and a sentence cut at a line end was
    quoted cut); each table row is one, with its table's header row (which is not one
    itself); headings, code and table rules are left out. Each knows the headings it
    sits under (``section``: "## Session cache TTL" above "It is now 15 minutes.")."""
    in_code = False
    block: list[str] = []
    lines = [*text.splitlines(), ""]
    header: tuple[str, ...] = ()
    lead = marker = speaker = ""
    in_list = False
    transcript = _is_transcript(lines)
    headings: list[tuple[int, str]] = []  # (level, text) of the headings above
    section: tuple[str, ...] = ()
    for i, line in enumerate(lines):
        stripped = line.strip()
        fence = _FENCE.match(line)
        in_code ^= bool(fence)
        skipped = in_code or fence or stripped.startswith("#") or _TABLE_RULE.match(line)
        item = _MARKER.match(line)
        turn = _TURN.match(line) if transcript and not skipped else None
        if block and (skipped or item or turn or not stripped or stripped.startswith("|")):
            # the paragraph, item or speaker turn so far is whole
            units = _units(" ".join(block), marker, lead if marker else "", speaker)
            yield from (replace(u, section=section) for u in units)
            if not marker:
                last = block[-1].rstrip()
                lead = last if last.endswith(":") and len(last) <= 300 else ""
            block = []
        if stripped.startswith("#") and not in_code and not fence:
            lead, in_list = "", False
            if heading := _HEADING.match(stripped):
                level = len(heading.group(1))
                headings = [h for h in headings if h[0] < level]
                if title := _WIKILINK.sub(
                    lambda m: m.group(2) or m.group(1), heading.group(2) or ""
                ):
                    headings.append((level, title.strip()))
                section = tuple(t for _, t in headings)
        if skipped:
            continue
        if stripped.startswith("|"):
            cells = tuple(c.strip() for c in stripped.strip("|").split("|"))
            if i + 1 < len(lines) and _TABLE_RULE.match(lines[i + 1]):
                header = cells  # the header row: quoted with each row, not alone
                continue
            row = " | ".join(c for c in cells if c)
            units = _units(row, "", "")
            yield from (replace(u, header=header, cells=cells, section=section) for u in units)
            continue
        header = ()
        if not block:
            speaker = ""
        if item:
            in_list = True
            marker = item.group().strip()
            block.append(_MARKER.sub("", line).strip())
        elif turn:
            in_list, lead, marker = False, "", ""
            speaker = turn.group(1)
            block.append(line[turn.end() :].strip())
        elif stripped:
            if not block and in_list and not line.startswith((" ", "\t")):
                in_list, lead = False, ""  # a paragraph after the list
            marker = marker if block else ""  # a wrapped item goes on
            block.append(stripped)


def _is_transcript(lines: Sequence[str]) -> bool:
    """Whether the page is a meeting transcript: at least TURNS_MIN of its lines of text,
    and half of them, open with a speaker ("Project Manager: ..."), and a speaker speaks
    more than once (a note's "Date:", "Present:", "Decided by:" lines each open once)."""
    texts = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith(("#", "|"))]
    speakers = [m.group(1) for ln in texts if (m := _TURN.match(ln))]
    return (
        len(speakers) >= TURNS_MIN
        and 2 * len(speakers) >= len(texts)
        and len(set(speakers)) < len(speakers)
    )


def _units(text: str, marker: str, lead: str, speaker: str = "") -> Iterator[Unit]:
    """The sentences of a block; a speaker turn's each with its speaker ("Marketing: ..."),
    and none when the turn says nothing but noise."""
    if speaker:
        text = _SPACED_STOP.sub(r"\1", " ".join(_MARK.sub(" ", text).split()))
    for sentence in _split(text):
        yield Unit(
            f"{speaker}: {sentence}" if speaker else sentence, (), lead if marker else "", marker
        )


def _split(text: str) -> Iterator[str]:
    text = _WIKILINK.sub(lambda m: (m.group(2) or m.group(1)).strip(), text)
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
        if before in _BEFORE_NUMBER and text[m.end() : m.end() + 1].isdigit():
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
    and a [Title](path) citation once its page's run of sentences has ended. A table row
    is quoted as a small Markdown table under its header (rows of one table picked in a
    row share it); a list item under its list's lead-in, with its marker."""

    def __init__(self, question: str = "") -> None:
        self.question = question
        self.last: Sentence | None = None
        self.cited = False  # the last sentence's page is cited already
        self.quoted: list[Sentence] = []  # what adds() let through
        self.held: set[str] = set()  # the question's terms those hold
        self.best = 0.0  # the weight of the best of them

    def adds(self, s: Sentence) -> bool:
        """Whether ``s`` answers more of the question than the sentences quoted before
        it (see ADDS_SHARE); the first always does. Records it when it does."""
        weights = dict(s.weights)
        same_block = any(
            q.path == s.path
            and ((q.header and q.header == s.header) or (q.lead and q.lead == s.lead))
            for q in self.quoted
        )
        new = sum(w for t, w in weights.items() if t not in self.held)
        if self.quoted and weights and not same_block and new < ADDS_SHARE * self.best:
            return False
        self.quoted.append(s)
        self.held |= set(weights)
        self.best = max(self.best, sum(weights.values()))
        return True

    def add(self, s: Sentence) -> list[str]:
        pieces = []
        last = self.last
        if last is not None and last.path != s.path and not self.cited:
            pieces.append(_cite(last))
        before = last if last is not None and last.path == s.path and not self.cited else None
        text = _quote(s, before, first=last is None)
        if last is not None and last.history:  # the history block ends its paragraph
            text = "\n\n" + text.lstrip(" ")
        if s.history:  # current before past: the newest page's value, as of its date
            gap = text[: len(text) - len(text.lstrip())]
            text = f"{gap}As of {s.date}:{chr(10) if s.header else ' '}{text.lstrip()}"
        if last is None and (value := lead_value(self.question, s.text)):
            text = f"**{value}**\n\n{text.lstrip()}"  # a one-line lead: the value asked for
        self.last, self.cited = s, False
        if not s.history:
            return [*pieces, text]
        # then each older page's sentence on the same fact, each cited
        pieces += [text, _cite(s)]
        for old in s.history:
            pieces += [f"\n\nBefore that ({old.date}): {old.text}", _cite(old)]
        self.cited = True
        return pieces

    def end(self) -> list[str]:
        """The last citation, or "not covered" when nothing was picked."""
        if self.last is None:
            return [NOT_COVERED]
        return [] if self.cited else [_cite(self.last)]


def _quote(s: Sentence, before: Sentence | None, *, first: bool) -> str:
    """``s`` as it is shown after ``before`` (the sentence quoted just before it from the
    same page, if any)."""
    gap = "" if first else "\n\n"
    if s.header:
        width = max(len(s.header), len(s.cells))
        if before is not None and before.header == s.header:
            return "\n" + _row(s.cells, width)
        rule = "|" + "---|" * width
        return f"{gap}{_row(s.header, width)}\n{rule}\n{_row(s.cells, width)}"
    if s.lead:
        item = f"{s.marker} {s.text}"
        if before is not None and before.lead == s.lead:
            numbered_alike = before.marker == s.marker and s.marker[0].isdigit()
            return (" " + s.text) if numbered_alike else "\n" + item
        return f"{gap}{s.lead}\n{item}"
    after_block = before is not None and (before.header or before.lead)
    return ("\n\n" if after_block else ("" if first else " ")) + s.text


def _row(cells: tuple[str, ...], width: int) -> str:
    return "| " + " | ".join([*cells, *[""] * (width - len(cells))]) + " |"


def _cite(s: Sentence) -> str:
    # after a table the citation is a line of its own (on the row it would be a cell)
    return f"\n\n[{s.title}]({s.path})" if s.header else f" [{s.title}]({s.path})"
