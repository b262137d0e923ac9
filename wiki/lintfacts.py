"""What `kb-ai lint` knows of each article file, kept between runs by file identity.

Reading and parsing every article (frontmatter, links, claims, index line, search
hash) was most of what a lint of a large wiki cost: about 11 s at 10,000 articles. Each
file's facts are kept in state.db (``lint_facts``) under its stamp, (mtime_ns, size,
inode) and the version of this code; a file whose stamp has not changed is not read
again. kb-ai writes a file by renaming a new one over it, so each write gives it a new
inode too. A file modified in the last two seconds is read but not kept: a write in the
same clock tick that kept the size would otherwise look unchanged.

The claims an article makes (numbers, dates, names, identifiers: kb_ai.grounding's,
the check every written article and answer passes) are held to its sources'
extractions, which change on their own: that verdict is kept with the stamps of those
extractions, and found again (the article read again) when one of them changed. Only
lines with a token the material does not state as written are searched for claims: a
claim is made of such tokens, and finding claims costs more than the rest of a lint.
The checks over the whole wiki (links, index, orphans, tables) run on these facts every
time, so they see every article.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kb_ai.errors import KbAiError, StorageError, storage_cause
from kb_ai.grounding import Claim, Evidence, extract_claims, normalise, stated_verbatim
from wiki._frontmatter import load_document
from wiki.articles import article_from
from wiki.catalog import entry_for, format_entry
from wiki.extraction import read_extraction_data
from wiki.hand_edits import base_path
from wiki.indexing import search_doc
from wiki.layout import KnowledgeBase
from wiki.linkcheck import body_links, prose_lines
from wiki.schema import apply_migrations
from wiki.search import content_hash

__all__ = ["REQUIRED_FIELDS", "ArticleFacts", "gather_facts"]

REQUIRED_FIELDS = ("title", "type", "summary", "sources", "created", "updated")
#: Part of every stamp: bump it with any change to what the facts hold or how they are found.
VERSION = "5"  # 5: a hand edit merged into an article is not held to its sources
RECENT_NS = 2_000_000_000
MIGRATIONS = (
    "CREATE TABLE lint_facts (path TEXT PRIMARY KEY, stamp TEXT NOT NULL, facts TEXT NOT NULL)",
)
_CONFLICT = re.compile(r"^\s*(?:[-*>]\s*)*\**Conflict\b[^:\n]{0,40}:.*$", re.M)
_CODE = re.compile(r"`[^`\n]*`")
_WIKILINK = re.compile(r"\[\[([^\]|\n]*)(?:\|([^\]\n]*))?\]\]")
_URL = re.compile(r"https?://\S+")


@dataclass
class ArticleFacts:
    """One article file as lint sees it. ``error``: why it could not be read as an
    article (then nothing else is known of it)."""

    path: str
    error: str | None = None
    missing: list[str] = field(default_factory=list)  # required frontmatter fields
    title: str = ""
    sources: list[str] = field(default_factory=list)
    links: list[list[str]] = field(default_factory=list)  # [kind, as written, target]
    line: str = ""  # its master-index line
    search: str = ""  # the search table's content hash of it
    conflicts: list[str] = field(default_factory=list)  # its "Conflict (...):" lines
    material: str | None = None  # the extractions' stamps ``unsupported`` was found with
    unsupported: list[list[str]] = field(default_factory=list)


def gather_facts(
    kb: KnowledgeBase, on_disk: Iterable[str], conn: sqlite3.Connection | None = None
) -> dict[str, ArticleFacts]:
    """The facts of every article at ``on_disk``: kept ones where the file (and its
    sources' extractions) did not change, read ones elsewhere. With no ``conn``,
    every file is read and nothing is kept."""
    on_disk = list(on_disk)
    kept = _load(conn) if conn is not None else {}
    materials = _Materials(kb)
    now = time.time_ns()
    facts: dict[str, ArticleFacts] = {}
    store: list[tuple[str, str, str]] = []
    root = str(kb.root)
    for rel in on_disk:
        try:
            st = os.lstat(os.path.join(root, rel))
        except OSError as exc:
            facts[rel] = ArticleFacts(rel, error=f"the file cannot be read: {exc.strerror}")
            continue
        if stat.S_ISLNK(st.st_mode):
            facts[rel] = ArticleFacts(rel, error="a symlink, not an article file")
            continue
        stamp = f"{VERSION}:{st.st_mtime_ns}:{st.st_size}:{st.st_ino}"
        hit = kept.get(rel)
        changed = hit is None or hit[0] != stamp
        found, body = _read(kb, rel) if changed else (ArticleFacts(**json.loads(hit[1])), None)
        racy = now - st.st_mtime_ns < RECENT_NS
        if found.error is None:
            key, recent = materials.stamp(found.sources, now)
            racy = racy or recent
            if found.material != key:
                if body is None:  # kept, but a source's extraction changed: read again
                    found, body = _read(kb, rel)
                if found.error is None:
                    found.unsupported = materials.unsupported(found, kb_ai_lines(kb, rel, body))
                    found.material = key
                changed = True
        facts[rel] = found
        if changed and not racy and conn is not None:
            store.append((rel, stamp, json.dumps(vars(found), ensure_ascii=False)))
    if conn is not None:
        _save(conn, store, set(kept) - set(on_disk))
    return facts


def kb_ai_lines(kb: KnowledgeBase, rel: str, body: str | None) -> str:
    """The lines of ``body`` that are kb-ai's: a person's lines merged into the article
    (those not in kb-ai's own version, kept under bases/) are the person's word, not a
    claim its sources must state."""
    base = kb.root / base_path(rel)
    if not body or not base.is_file():
        return body or ""
    own = set(base.read_text(encoding="utf-8").splitlines())
    return "\n".join(line for line in body.splitlines() if line in own)


def _read(kb: KnowledgeBase, rel: str) -> tuple[ArticleFacts, str]:
    """The facts of the article file ``rel``, read and parsed; and its body."""
    try:
        meta, body = load_document((kb.root / rel).read_text(encoding="utf-8"), rel)
    except UnicodeDecodeError:
        return ArticleFacts(rel, error="the file is not UTF-8 text"), ""
    except OSError as exc:
        return ArticleFacts(rel, error=f"the file cannot be read: {exc.strerror}"), ""
    except KbAiError as exc:
        return ArticleFacts(rel, error=str(exc).split("\n", 1)[0]), ""
    article = article_from(rel, meta, body)
    body = article.body
    conflicts = []
    if "Conflict" in body:
        for m in _CONFLICT.finditer(body):
            line = " ".join(m.group().split())
            conflicts.append(line if len(line) <= 200 else line[:199] + "…")
    facts = ArticleFacts(
        rel,
        missing=[name for name in REQUIRED_FIELDS if name not in meta],
        title=article.title,
        sources=list(article.sources),
        links=[[link.kind, link.text, link.target] for link in body_links(body, rel)],
        line=format_entry(entry_for(article)),
        search=content_hash(search_doc(article)),
        conflicts=conflicts,
    )
    return facts, body


def _claims(body: str, lowered: list[str]) -> list[Claim]:
    """The claims of an article's prose worth holding to its sources (``lowered``: their
    text, NFKC and lower case): not in code, headings, link targets or URLs, and no whole
    number below 10 (list steps, "2 options"), which would flag more than it catches.
    A line whose every token that could make a claim stands in the material as written
    makes none the material does not state, and is not searched."""
    lines = []
    for line in prose_lines(body):
        if line.lstrip().startswith("#"):
            continue
        line = _CODE.sub(" ", line)
        line = _WIKILINK.sub(lambda m: m.group(2) or m.group(1), line)
        line = _URL.sub(" ", line)
        if _may_claim(normalise(line), lowered):
            lines.append(line)
    return [
        c
        for c in extract_claims("\n".join(lines))
        if c.kind != "number" or "." in c.value or int(c.value) >= 10
    ]


class _Materials:
    """The sources' extractions: their stamps, and their text read once each."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self._dir = str(kb.extraction_dir)
        self._raw = os.path.join(kb.root, "raw")
        self._stamps: dict[str, tuple[str, bool]] = {}
        self._texts: dict[str, str | None] = {}
        self._owns: dict[str, str] = {}

    def stamp(self, sources: list[str], now: int) -> tuple[str, bool]:
        """The stamps of ``sources``' extractions as one key; and whether one is recent."""
        parts, recent = [], False
        for source in sources:
            if source not in self._stamps:
                stamp, fresh = [], False
                for folder in (self._dir, self._raw):  # its extraction, and its text
                    try:
                        st = os.stat(os.path.join(folder, f"{_slug(source)}.md"))
                    except OSError:
                        stamp.append("-")
                    else:
                        stamp.append(f"{st.st_mtime_ns}:{st.st_size}:{st.st_ino}")
                        fresh = fresh or now - st.st_mtime_ns < RECENT_NS
                self._stamps[source] = (f"{source}=" + "/".join(stamp), fresh)
            part, fresh = self._stamps[source]
            parts.append(part)
            recent = recent or fresh
        return f"{VERSION}|" + "|".join(parts), recent

    def unsupported(self, facts: ArticleFacts, body: str) -> list[list[str]]:
        """The claims of the article (``body``) its sources never state: neither their
        extractions nor their own text (raw/), which is read only for what the
        extractions do not state as written. An article a small model keeps in its
        source's words (compiler/source_article.py) states what the source states, and a
        claim the source makes is supported even where the extraction left it out."""
        texts = [t for t in (self._text(s) for s in facts.sources) if t]
        if not texts:
            return []  # no source (reported), or none extracted: nothing to hold it to
        # A claim written in the material as it is in the article is stated: only the
        # rest are looked up in every spelling (indexing the material for that was most
        # of the cost of a first lint).
        lowered = [normalise(t).lower() for t in (facts.title, *texts)]
        rest = [c for c in _claims(body, lowered) if not stated_verbatim(c.text, lowered)]
        if not rest:
            return []
        own = [t for t in (self._own(s) for s in facts.sources) if t]
        if own:
            own_lowered = [normalise(t).lower() for t in own]
            rest = [c for c in rest if not stated_verbatim(c.text, own_lowered)]
            if not rest:
                return []
        evidence = Evidence(facts.title, *texts, *own)
        return [[c.kind, c.text] for c in rest if not evidence.supports(c)]

    def _text(self, source: str) -> str | None:
        """The text of a source's stored extraction, or None."""
        if source not in self._texts:
            try:
                data = read_extraction_data(self.kb, _slug(source))
            except (KbAiError, OSError, UnicodeDecodeError):
                self._texts[source] = None
            else:
                self._texts[source] = "\n".join(_strings(data))
        return self._texts[source]

    def _own(self, source: str) -> str:
        """The source's own text (its raw/ copy), or "" when it is gone (reported by the
        sources check)."""
        if source not in self._owns:
            try:
                with open(os.path.join(self._raw, _slug(source) + ".md"), encoding="utf-8",
                          errors="replace") as f:  # fmt: skip
                    self._owns[source] = f.read()
            except OSError:
                self._owns[source] = ""
        return self._owns[source]


_TOKEN = re.compile(r"\w[\w.,/:'’-]*\w|\w")
# a date may be written over several tokens ("2 March 2026"), each stated apart
_SPREAD_DATE = re.compile(
    r"(?i)\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b|[年月]"
)


_WORD_CASE = re.compile(r"[A-Z][a-z]+")
# where grounding's claims.py starts a sentence: a word there is no name
_SENTENCE_START = re.compile(
    r"(?:^[ \t>#|*_-]*(?:\d+[.)]\s+)?|[.!?:;|。！？；][)\"'”’*_]*\s+|[(\"“‘\[])[*_\"'“(\[]*$"
)


def _may_claim(line: str, lowered: list[str]) -> bool:
    """Whether ``line`` may make a claim the material does not state: a token with a
    digit, a capital or a joining . / : that does not stand in it as written (a
    capitalised word opening a sentence aside: grounding does not count it a name)."""
    if _SPREAD_DATE.search(line) and any(c.isdigit() for c in line):
        return True
    for m in _TOKEN.finditer(line):
        token = m.group()
        if token.islower() and not any(c in token for c in "./:"):
            continue
        if stated_verbatim(token, lowered):
            continue
        if _WORD_CASE.fullmatch(token) and _SENTENCE_START.search(line, 0, m.start()):
            continue
        return True
    return False


def _slug(source: str) -> str:
    """The extraction's name of a sources entry ("raw/x.md#pages=3-5" is raw/x.md's)."""
    return source.split("#", 1)[0].removeprefix("raw/").removesuffix(".md")


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif value is not None:
        yield str(value)


def _load(conn: sqlite3.Connection) -> dict[str, tuple[str, str]]:
    apply_migrations(conn, "lint_facts", MIGRATIONS)
    return {path: (stamp, data) for path, stamp, data in conn.execute("SELECT * FROM lint_facts")}


def _save(conn: sqlite3.Connection, rows: list[tuple[str, str, str]], gone: set[str]) -> None:
    """Keep ``rows``; forget the files that are ``gone``. A busy database (a compile
    writing) only means the facts are found again next time."""
    if not rows and not gone:
        return
    try:
        with conn:
            conn.executemany("INSERT OR REPLACE INTO lint_facts VALUES (?, ?, ?)", rows)
            conn.executemany("DELETE FROM lint_facts WHERE path = ?", [(p,) for p in gone])
    except (StorageError, sqlite3.OperationalError) as exc:
        cause = exc.cause if isinstance(exc, StorageError) else storage_cause(exc)
        if cause != "busy":
            raise
