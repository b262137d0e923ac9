"""Identity: whether a document arriving now is a revision of a source the wiki has.

A source is a document, not a path: the same how-to compiled from another folder,
uploaded again, fetched from its URL or moved in git is the same source, and replaces
its raw text, extraction and articles instead of adding a second article. The ways a
document is known as a revision, strongest first:

1. it says so: a ``kb-id`` line in its frontmatter, ``kb-ai compile --revises ID``, or
   the upload field "This revises" (the id of a source is its raw file's name:
   ``raw/<id>.md``). An id that names no source is an error, never a guess;
2. git says the file was moved or renamed from a file compiled before;
3. its file name and its title (first heading) are those of exactly one source, and
   its text is not unrelated to that source's; or its file name is one source's alone
   and its text is more like that source's than any other (in between, at least);
4. its text is nearly the same as exactly one source's: Jaccard similarity over word
   shingles, exact, of the few sources a small sketch puts forward (the next best must
   be below the threshold, and well behind).

Two sources that could match, or a similarity in between, make a new source, and the
run names the source it may revise (:class:`Ambiguous`). Pure: every lookup goes
through the :class:`KnownSources` the caller gives (compiler/identity_index.py keeps
one in state.db).
"""

from __future__ import annotations

import functools
import heapq
import re
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Protocol

from kb_ai.errors import SourceError
from wiki.words import CJK_RUN

#: Words per shingle: three keep a changed number from touching more than three.
SHINGLE_WORDS = 3
#: Hashes kept per source to find candidates (the smallest of its shingle hashes).
SKETCH_SIZE = 64
#: At least this similarity to exactly one source: a revision of it. Derived on the dev
#: half of ../shared/data by bench/identity/threshold.py's rule (at most 1 wrong merge
#: in 100 new documents of a 1,000-source wiki); docs/benchmarks-identity.md has the
#: held-out half's figures.
SAME_TEXT = 0.75
#: Between this and SAME_TEXT: perhaps a revision; a new source the run names (the same
#: rule: at most 1 new document in 10 named needlessly).
MAYBE_TEXT = 0.25
#: Near text matches the best source when the next is below SAME_TEXT by this much.
LEAD = 0.15
#: A file name and title match counts unless the texts are less alike than this.
NAME_FLOOR = 0.2

_FRONTMATTER = re.compile(r"\A---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)
_KB_ID = re.compile(r"^kb-id[ \t]*:[ \t]*['\"]?([^'\"\n#]*?)['\"]?[ \t]*(?:#.*)?$", re.M)
_WORD = re.compile(r"[^\W_]+")
# Odd 64-bit multipliers: a shingle's hash depends on its words and their order.
_MIX_A, _MIX_B, _MIX_C = 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
_MASK, _HALF, _SIGN = (1 << 64) - 1, 1 << 63, 1 << 64


@dataclass(frozen=True)
class Document:
    """A document as identity sees it, after reading and redaction."""

    origin: str
    title: str
    text: str
    name: str = ""  # the file name it came under ("deploy-howto.md"); "" for pasted text
    revises: str = ""  # the source a person said it revises (--revises, the upload field)
    renamed_from: tuple[str, ...] = ()  # origins git says this file had before

    @property
    def said_revises(self) -> str:
        """The id the document or its sender gave: the sender's word, else its kb-id."""
        return self.revises.strip() or frontmatter_id(self.text)


@dataclass(frozen=True)
class Known:
    """A source of the wiki: its raw path, title and the file name it came under."""

    raw_path: str
    title: str
    name: str = ""

    @property
    def id(self) -> str:
        return PurePosixPath(self.raw_path).stem


@dataclass(frozen=True)
class Match:
    """The document revises ``source``; ``way`` says how that was known."""

    source: Known
    way: str  # "kb-id", "git rename", "file name and title", "text"
    similarity: float | None = None


@dataclass(frozen=True)
class Ambiguous:
    """The document may revise one of ``candidates`` (best first): a new source, named."""

    candidates: list[tuple[Known, float]] = field(default_factory=list)
    reason: str = ""


class KnownSources(Protocol):
    """The lookups identity needs over the wiki's sources."""

    def by_id(self, ident: str) -> Known | None: ...

    def by_origin(self, origins: Sequence[str]) -> Known | None: ...

    def named(self, name: str) -> list[Known]: ...

    def similar(self, shingles: frozenset[int]) -> list[tuple[Known, float]]: ...

    def similarity(self, known: Known, shingles: frozenset[int]) -> float: ...


class UnknownSourceError(SourceError):
    """A kb-id (or --revises, or the upload field) names no source of the wiki."""


def find_revised(document: Document, known: KnownSources) -> Match | Ambiguous | None:
    """The source ``document`` revises, an :class:`Ambiguous` when it may revise one,
    or None: a new source. Raises UnknownSourceError for an id that names no source."""
    said = document.said_revises
    if said:
        found = known.by_id(source_id(said))
        if found is None:
            raise unknown_source(said, document.name or document.origin)
        return Match(found, "kb-id")
    if document.renamed_from:
        found = known.by_origin(document.renamed_from)
        if found is not None:
            return Match(found, "git rename")
    shingles = shingle_hashes(body_text(document.text))
    same_name = known.named(document_name(document)) if document.name else []
    named = [k for k in same_name if title_key(k.title) == title_key(document.title)]
    if len(named) == 1:
        score = known.similarity(named[0], shingles)
        if score >= NAME_FLOOR:
            return Match(named[0], "file name and title", score)
    similar = known.similar(shingles)
    close = [(k, s) for k, s in similar if s >= MAYBE_TEXT]
    if close and close[0][1] >= SAME_TEXT and (len(close) == 1 or _clear_lead(close)):
        return Match(close[0][0], "text", close[0][1])
    alone = len(same_name) == 1 and close and close[0][0] == same_name[0]
    if alone and (len(close) == 1 or _clear_lead(close, floor=MAYBE_TEXT)):
        return Match(same_name[0], "file name and text", close[0][1])
    if len(named) > 1:
        scored = sorted(((k, known.similarity(k, shingles)) for k in named), key=_best_first)
        return Ambiguous(scored, "more than one source has this file name and title")
    if len(close) > 1 and close[0][1] >= SAME_TEXT:
        return Ambiguous(close, "its text is nearly the same as more than one source's")
    if close:
        return Ambiguous(close, "its text is like this source's, but not nearly the same")
    if named:  # one source of this name and title, with unrelated text
        return Ambiguous(
            [(named[0], known.similarity(named[0], shingles))],
            "it has this source's file name and title, but other text",
        )
    return None


def unknown_source(said: str, where: str = "") -> UnknownSourceError:
    """The error of an id that names no source (``where``: the document that gave it)."""
    return UnknownSourceError(
        f"{where + ': ' if where else ''}{said!r} names no source of this knowledge base",
        hint="give a source's id, the name of its raw file (raw/<id>.md, listed in each "
        "article's sources), or leave it out to compile the document as a new source",
    )


def source_id(text: str) -> str:
    """The id a person wrote, as raw/<id>.md names it ("raw/x.md", "x.md" and "x": x)."""
    ident = text.strip().removeprefix("raw/")
    return ident.removesuffix(".md")


def frontmatter_id(text: str) -> str:
    """The ``kb-id`` of a document's YAML frontmatter, or ""."""
    m = _FRONTMATTER.match(text)
    if m is None:
        return ""
    found = _KB_ID.search(m.group(1))
    return found.group(1).strip() if found else ""


def body_text(text: str) -> str:
    """``text`` without its frontmatter (a kb-id line is not what a document says)."""
    m = _FRONTMATTER.match(text)
    return text[m.end() :] if m else text


def document_name(document: Document) -> str:
    return normal_name(document.name)


def normal_name(name: str) -> str:
    """A file name compared as identity compares it: its last part, lower-cased."""
    return PurePosixPath(name.replace("\\", "/")).name.strip().lower()


def name_of_origin(origin: str) -> str:
    """The file name an origin came under: a path's (an archive member's) or a URL's
    last part; "" for what has none (pasted text, an upload known by its hash)."""
    if origin.startswith(("http://", "https://")):
        return normal_name(origin.split("?", 1)[0].split("#", 1)[0].rstrip("/"))
    if "#" in origin:  # a member of an archive
        return normal_name(origin.rsplit("#", 1)[-1])
    if ":" in origin.split("/", 1)[0]:  # submitted:<hash>, session:<id>: no file name
        return ""
    return normal_name(origin)


def words(text: str) -> list[str]:
    """The words of ``text``, lower-cased; each CJK character counts as a word."""
    found = _WORD.findall(text.lower())
    if CJK_RUN.search(text) is None:
        return found
    out: list[str] = []
    for word in found:
        if CJK_RUN.search(word):
            out.extend(_split_cjk(word))
        else:
            out.append(word)
    return out


def _split_cjk(word: str) -> Iterable[str]:
    at = 0
    for m in CJK_RUN.finditer(word):
        if m.start() > at:
            yield word[at : m.start()]
        yield from m.group(0)
        at = m.end()
    if at < len(word):
        yield word[at:]


@functools.lru_cache(maxsize=2)  # a run identifies a source, then remembers it: once
def shingle_hashes(text: str) -> frozenset[int]:
    """The hashes of ``text``'s shingles (SHINGLE_WORDS words each; a shorter text is
    one shingle), as signed 64-bit integers (what SQLite stores). Each word is hashed
    once (CRC-32, stable across processes), a shingle's hash mixed from its words'."""
    ws = words(text)
    if not ws:
        return frozenset()
    cache: dict[str, int] = {}
    hs = [cache.get(w) or cache.setdefault(w, zlib.crc32(w.encode("utf-8")) + 1) for w in ws]
    while len(hs) < SHINGLE_WORDS:
        hs.append(0)
    out = set()
    for a, b, c in zip(hs, hs[1:], hs[2:], strict=False):
        h = (a * _MIX_A + b * _MIX_B + c * _MIX_C) & _MASK
        out.add(h - _SIGN if h >= _HALF else h)
    return frozenset(out)


@functools.lru_cache(maxsize=8)
def sketch(shingles: frozenset[int]) -> tuple[int, ...]:
    """The SKETCH_SIZE smallest hashes: two texts that share most shingles share most
    of these too, so they find each other in an index of sketches. (Remembered for the
    last few texts: a source's sketch is asked for when it is identified, stored and
    compared again.)"""
    return tuple(heapq.nsmallest(SKETCH_SIZE, shingles))


def jaccard(a: frozenset[int], b: frozenset[int]) -> float:
    """Shared shingles over all shingles of the two (1.0 for two empty texts)."""
    if not a and not b:
        return 1.0
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)


def _clear_lead(close: list[tuple[Known, float]], floor: float = SAME_TEXT) -> bool:
    """Whether the best source is clearly the one: the next is below ``floor``, and
    well behind (a document like two others is named, not merged)."""
    best, second = close[0][1], close[1][1]
    return second < floor and best - second >= LEAD


def title_key(title: str) -> str:
    """A title as identity compares it: case and spacing aside."""
    return " ".join(title.lower().split())


def _best_first(item: tuple[Known, float]) -> tuple[float, str]:
    return (-item[1], item[0].raw_path)
