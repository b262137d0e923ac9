"""The catalog: index/master-index.md (one line per article) and index/topics.md.

A master index line reads::

    - [Title](wiki/type/slug.md) — summary | keys: a, b

with `` | keys: ...`` left out when there are none. The few characters that would make
a line ambiguous are escaped with a backslash: ``[ ]`` in titles, ``|`` in summaries,
``|`` and ``,`` in keys (and a backslash before any of those).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from wiki.articles import (
    Article,
    article_mtimes,
    derive_keys,
    list_articles,
    read_article,
    read_articles,
)
from wiki.files import atomic_write_text

if TYPE_CHECKING:
    from wiki.layout import KnowledgeBase

MASTER_HEADER = (
    "# Master index\n\n"
    "One line per article: title, path, summary and keys. Written by kb-ai on every compile.\n\n"
)
TOPICS_HEADER = "# Topics\n\nThe articles under each tag. Written by kb-ai on every compile.\n"
KEYS_MARK = "keys:"


@dataclass
class CatalogEntry:
    """What the catalog knows of one article."""

    path: str
    title: str
    summary: str
    keys: list[str] = field(default_factory=list)
    type: str = ""
    tags: list[str] = field(default_factory=list)
    # Its master-index line as kb-ai wrote it, when known to be that (current_catalog):
    # write_indexes reuses it instead of formatting the entry again.
    line: str = field(default="", compare=False, repr=False)


def entry_for(article: Article) -> CatalogEntry:
    """The catalog entry of ``article``; keys come from its tables when it declares none."""
    return CatalogEntry(
        path=article.path,
        title=" ".join(article.title.split()),
        summary=" ".join(article.summary.split()),
        keys=list(article.keys) or derive_keys(article.body),
        type=article.type,
        tags=sorted(set(article.tags), key=_tag_order),
    )


def normalise_article_path(path: str) -> str:
    """The spellings models and people use for an article path, reduced to ``wiki/<type>/<slug>.md``.

    Handles a leading slash or ``./``, surrounding quotes, brackets or backticks, a missing
    ``.md`` and an ``#anchor``, so a real page is never dropped for its spelling. The
    result is not checked for existence or escape: callers compare it with known paths.
    """
    p = path.strip().strip("<>`'\"").split("#", 1)[0].strip()
    p = re.sub(r"^\(?(?:\./|/)*", "", p).rstrip(")").strip()
    if p and not p.endswith(".md"):
        p += ".md"
    return p


def format_entry(e: CatalogEntry) -> str:
    """The master index line of ``e``."""
    line = f"- [{_escape(e.title, '[]')}]({e.path})"
    if e.summary.strip():
        line += f" — {_escape(e.summary, '|')}"
    if e.keys:
        line += f" | {KEYS_MARK} " + ", ".join(_escape(k, "|,") for k in e.keys)
    return line


# (the title's runs of plain characters taken whole and never given back: half the time
# of one character at a time, 40 of 85 ms over the 30,000 lines of a 10,000-article wiki's
# indexes; the same matches, as a backslash is only ever taken with the next character)
_LINE = re.compile(
    r"^\s*[-*+]\s+\[(?P<title>(?:[^\\\]]++|\\.)*+)\]\((?P<path>[^()\s]+)\)(?P<rest>.*)$"
)


_SUMMARY_DASH = re.compile(r"^\s*(?:—|–|-{1,2}|:)\s*")


def parse_master_index(text: str, *, keep_lines: bool = False) -> list[CatalogEntry]:
    """The entries of a master index: the inverse of :func:`format_entry`.

    Tolerant of hand edits: other lines are skipped, the dash before the summary may be
    any dash or a colon, and the summary and keys may be missing. ``keep_lines`` keeps
    each entry's line (only for an index kb-ai wrote itself: see current_catalog).
    """
    entries = []
    for line in text.split("\n"):
        line = line.rstrip("\r")
        match = _LINE.match(line)
        if not match:
            continue
        path = match["path"]
        rest = _SUMMARY_DASH.sub("", match["rest"].strip(), count=1)
        parts = _split_unescaped(rest, "|")
        keys: list[str] = []
        if len(parts) > 1 and parts[-1].strip().startswith(KEYS_MARK):
            raw_keys = parts.pop().strip()[len(KEYS_MARK) :]
            keys = [k for k in (_unescape(k).strip() for k in _split_unescaped(raw_keys, ",")) if k]
        summary = " ".join(_unescape("|".join(parts)).split())
        segments = path.split("/")
        entries.append(
            CatalogEntry(
                path=path,
                title=" ".join(_unescape(match["title"]).split()),
                summary=summary,
                keys=keys,
                type=segments[1] if len(segments) > 2 else "",
                line=line if keep_lines else "",
            )
        )
    return entries


def index_lines(text: str) -> list[tuple[str, str]]:
    """(path, line) of each entry of a master index, as :func:`parse_master_index` finds
    them, without reading their summaries and keys (what lint compares with the
    articles' own lines)."""
    out = []
    for line in text.split("\n"):
        line = line.rstrip("\r")
        match = _LINE.match(line)
        if match:
            out.append((match["path"], line))
    return out


def load_catalog(kb: KnowledgeBase, *, keep_lines: bool = False) -> list[CatalogEntry]:
    """The catalog as the last compile wrote it (tags from topics.md); [] if there is none."""
    if not kb.master_index_path.is_file():
        return []
    master = kb.master_index_path.read_text(encoding="utf-8")
    topics = kb.topics_path.read_text(encoding="utf-8") if kb.topics_path.is_file() else None
    return _entries_of(master, topics, keep_lines=keep_lines)


def _entries_of(master: str, topics: str | None, *, keep_lines: bool) -> list[CatalogEntry]:
    """The entries of a master index, their tags from the topic index (if there is one)."""
    entries = parse_master_index(master, keep_lines=keep_lines)
    if topics is not None:
        tags = _parse_topics(topics)
        for entry in entries:
            entry.tags = sorted(tags.get(entry.path, ()), key=_tag_order)
    return entries


def build_catalog(kb: KnowledgeBase) -> list[CatalogEntry]:
    """The catalog read from the articles themselves, sorted by path (unreadable ones
    left out, with a warning)."""
    articles = read_articles(kb, list_articles(kb), read_article)
    return [entry_for(article) for article in articles]


def current_catalog(kb: KnowledgeBase, fingerprint: str | None) -> list[CatalogEntry]:
    """The catalog of the articles on disk now, sorted by path, reading as few as it can.

    ``fingerprint`` is what :func:`write_indexes` returned when it last wrote the
    indexes. When the files still match it, their entries are trusted for every article
    not modified since they were written; articles changed later (by hand, a git
    checkout) or missing from them are read, deleted ones dropped. Anything else (no
    fingerprint, indexes edited or gone) reads every article, as :func:`build_catalog`.
    A compile of a few sources into a wiki of thousands thus reads a few articles.
    """
    files = _index_files(kb) if fingerprint is not None else None
    if files is None or _digest(*files) != fingerprint:
        return build_catalog(kb)
    written_ns = min(kb.master_index_path.stat().st_mtime_ns, kb.topics_path.stat().st_mtime_ns)
    loaded = _as_written(kb, fingerprint)
    if loaded is None:  # (parsed from the bytes just fingerprinted, not read again)
        master, topics = (_text(data) for data in files)
        loaded = _entries_of(master, topics, keep_lines=True)
    return refresh_catalog(kb, loaded, written_ns)


def refresh_catalog(
    kb: KnowledgeBase,
    entries: list[CatalogEntry],
    since_ns: int,
    fresh: dict[str, CatalogEntry] | None = None,
) -> list[CatalogEntry]:
    """The catalog of the articles on disk now, sorted by path: ``fresh`` entries as
    given, ``entries`` for the articles not modified at or after ``since_ns``
    (nanoseconds, as ``st_mtime_ns``), and every other article read from disk."""
    fresh = fresh or {}
    known = {e.path: e for e in entries}
    mtimes = article_mtimes(kb)
    out = []
    for rel in sorted(mtimes):
        entry = fresh.get(rel)
        if entry is None:
            entry = known.get(rel)
            if entry is None or mtimes[rel] >= since_ns:
                read = next(read_articles(kb, [rel], read_article), None)
                if read is None:  # unreadable: left out, with a warning
                    continue
                entry = entry_for(read)
        out.append(entry)
    return out


def index_fingerprint(kb: KnowledgeBase) -> str | None:
    """A digest of master-index.md and topics.md as they are on disk; None if one is missing."""
    files = _index_files(kb)
    return _digest(*files) if files is not None else None


def _index_files(kb: KnowledgeBase) -> tuple[bytes, bytes] | None:
    """The bytes of master-index.md and topics.md; None if one is missing."""
    try:
        return kb.master_index_path.read_bytes(), kb.topics_path.read_bytes()
    except OSError:
        return None


def _text(data: bytes) -> str:
    """``data`` as ``read_text(encoding="utf-8")`` reads a file (newlines translated)."""
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


#: Mixed into the fingerprint: a change to the line format must rebuild the indexes,
#: not carry old lines forward. Bump it with any change to format_entry or the topics.
FORMAT_VERSION = b"1"


def _digest(master: bytes, topics: bytes) -> str:
    return hashlib.sha256(FORMAT_VERSION + b"%d\n" % len(master) + master + topics).hexdigest()


def write_indexes(kb: KnowledgeBase, entries: list[CatalogEntry]) -> str:
    """Write master-index.md and topics.md atomically; the same entries give the same bytes.

    Entries are sorted by path; of two entries with the same path the later one wins.
    Returns the indexes' :func:`index_fingerprint`.
    """
    by_path = {e.path: e for e in entries}
    ordered = [by_path[p] for p in sorted(by_path)]
    count = f"{len(ordered)} article{'s' if len(ordered) != 1 else ''}.\n\n"
    master = MASTER_HEADER + count + "".join((e.line or format_entry(e)) + "\n" for e in ordered)
    atomic_write_text(kb.master_index_path, master)

    by_tag: dict[str, list[CatalogEntry]] = {}
    listed: dict[str, str] = {}  # path -> its line of the topic index
    for e in ordered:
        tags = _index_tags(e.tags)
        if tags:
            listed[e.path] = f"- [{_escape(e.title, '[]')}]({e.path})\n"
        for tag in tags:
            by_tag.setdefault(tag, []).append(e)
    sections = [
        f"\n## {tag}\n\n" + "".join(listed[e.path] for e in by_tag[tag])
        for tag in sorted(by_tag, key=_tag_order)
    ]
    topics = TOPICS_HEADER + "".join(sections)
    atomic_write_text(kb.topics_path, topics)
    fingerprint = _digest(master.encode("utf-8"), topics.encode("utf-8"))
    _WRITTEN.pop(str(kb.root), None)
    while len(_WRITTEN) >= _WRITTEN_KEPT:  # (the knowledge base written longest ago goes)
        _WRITTEN.pop(next(iter(_WRITTEN)))
    _WRITTEN[str(kb.root)] = (fingerprint, ordered)
    return fingerprint


# The entries of the indexes this process wrote last, by knowledge base, with their
# fingerprint: a long-lived process (kb-ai serve's worker) compiles one task after another,
# each starting from the indexes the one before wrote. Loading them from what was written
# (nothing in a run changes a catalog entry once made) took 32-36 ms for 10,000 articles,
# parsing the files 95-99 ms.
_WRITTEN: dict[str, tuple[str, list[CatalogEntry]]] = {}
_WRITTEN_KEPT = 8  # knowledge bases (a server may hold several)


def _as_written(kb: KnowledgeBase, fingerprint: str) -> list[CatalogEntry] | None:
    """What :func:`load_catalog` gives for the indexes this process last wrote here, if
    they are still the ones with ``fingerprint``: new objects, each as parsing its line
    back would give it (its tags as the topic index lists them). None, to parse the
    files, when an entry's line reads back as another path or as more than one entry (a
    file name with a parenthesis or a line break: the line pattern cannot hold it)."""
    written = _WRITTEN.get(str(kb.root))
    if written is None or written[0] != fingerprint:
        return None
    out = []
    for e in written[1]:
        if not e.line:  # (formatted for the file: read back as a line of it would be)
            parsed = parse_master_index(format_entry(e), keep_lines=True)
            if not parsed:  # (a path with a space: its lines are skipped when parsed)
                continue
            if len(parsed) != 1 or parsed[0].path != e.path:
                return None
            e = replace(parsed[0], tags=e.tags)
        tags = sorted(_index_tags(e.tags), key=_tag_order)
        out.append(replace(e, keys=list(e.keys), tags=tags))
    return out


def _index_tags(tags: list[str]) -> set[str]:
    """The tags the topic index lists an entry under: spaces normalised, empty ones out."""
    return {" ".join(t.split()) for t in tags} - {""}


def _parse_topics(text: str) -> dict[str, list[str]]:
    tags: dict[str, list[str]] = {}
    tag = None
    for line in text.split("\n"):
        if line.startswith("## "):
            tag = line[3:].strip()
        elif tag and (match := _LINE.match(line.rstrip("\r"))):
            tags.setdefault(match["path"], []).append(tag)
    return tags


def _tag_order(tag: str) -> tuple[str, str]:
    return (tag.casefold(), tag)


def _escape(text: str, specials: str) -> str:
    """Backslash ``specials``, and any backslash that :func:`_unescape` would eat."""
    text = " ".join(text.split())
    if "\\" not in text and not any(c in text for c in specials):
        return text  # (nearly every title and summary: 20,000 of a 10,000-article wiki's)
    pattern = r"\\(?=[\\\[\]|,]|$)|[" + re.escape(specials) + "]"
    return re.sub(pattern, lambda m: "\\" + m.group(0), text)


_ESCAPED = re.compile(r"\\([\\\[\]|,])")


def _unescape(text: str) -> str:
    # (most fields have no backslash: a 10,000-line master index has 36,000 of them)
    return _ESCAPED.sub(r"\1", text) if "\\" in text else text


def _split_unescaped(text: str, sep: str) -> list[str]:
    """``text`` split at each ``sep`` not escaped by a backslash (escapes are kept)."""
    if "\\" not in text:  # the common case, and a master index has thousands of lines
        return text.split(sep)
    parts, start = [], 0
    for match in re.finditer(r"\\.|" + re.escape(sep), text, re.S):
        if match.group(0) == sep:  # an escape pair is matched whole, so never split
            parts.append(text[start : match.start()])
            start = match.end()
    return [*parts, text[start:]]
