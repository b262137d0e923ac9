"""Corpora: named slices of the wiki, each a small file corpora/<name>.md kept in git.

A corpus file holds what it was built from (its filter, a description) and the articles
it held when it was built, in the order they were found; its body lists them as links,
so a person reading the repository sees what the slice is. Rebuilding runs the same
filter again over the wiki as it is then. This module only reads and writes the files;
which articles a filter matches is retrieval's (retrieval/corpora.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kb_ai.errors import KbAiError, NotFoundError, UsageError
from wiki._frontmatter import dump_document, load_document
from wiki.files import atomic_write_text
from wiki.raw import KINDS

if TYPE_CHECKING:
    from wiki.layout import KnowledgeBase

CORPORA_DIR = "corpora"
_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class CorpusFilter:
    """Which articles a corpus holds: every condition given must hold (an empty one is
    not a condition). ``types`` and ``topics`` and ``source_kinds`` match any of their
    values; ``files``: a path prefix some source or the article names; ``since`` and
    ``until``: ISO dates the article's life (created to updated) must touch; ``query``:
    words the search finds the article by, best first; ``limit``: at most that many (0: all)."""

    types: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    source_kinds: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    since: str = ""
    until: str = ""
    query: str = ""
    limit: int = 0

    def __post_init__(self) -> None:
        for name in ("since", "until"):
            value = getattr(self, name)
            if value and not _DATE.fullmatch(value):
                raise UsageError(f"--{name} {value!r} is not a date", hint="write it as YYYY-MM-DD")
        if self.since and self.until and self.since > self.until:
            raise UsageError(f"--since {self.since} is after --until {self.until}")
        if self.limit < 0:
            raise UsageError("--limit must be 0 (all) or more")
        unknown = [k for k in self.source_kinds if k not in KINDS]
        if unknown:
            raise UsageError(
                f"--source-kind {', '.join(unknown)} is not a kind of source",
                hint=f"one of {', '.join(KINDS)}",
            )

    def as_dict(self) -> dict[str, Any]:
        return {
            "types": list(self.types),
            "topics": list(self.topics),
            "source_kinds": list(self.source_kinds),
            "files": list(self.files),
            "since": self.since,
            "until": self.until,
            "query": self.query,
            "limit": self.limit,
        }

    def describe(self) -> str:
        """The filter in words, as `kb-ai corpus show` prints it."""
        parts = [
            f"{label} {', '.join(values)}"
            for label, values in (
                ("type", self.types),
                ("topic", self.topics),
                ("source kind", self.source_kinds),
                ("files under", self.files),
            )
            if values
        ]
        if self.since or self.until:
            parts.append(f"dated {self.since or '…'} to {self.until or '…'}")
        if self.query:
            parts.append(f"found by {self.query!r}")
        if self.limit:
            parts.append(f"at most {self.limit}")
        return "; ".join(parts) or "every article"


@dataclass(frozen=True)
class Corpus:
    name: str
    filter: CorpusFilter
    articles: tuple[str, ...]
    built: str  # ISO time of the last build
    description: str = ""
    titles: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def path(self) -> str:
        return f"{CORPORA_DIR}/{self.name}.md"

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "filter": self.filter.as_dict(),
            "built": self.built,
            "articles": list(self.articles),
            "path": self.path,
        }


def check_name(name: object) -> str:
    """A corpus name: lower-case letters, digits and inner hyphens, up to 63 characters."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name.endswith("-"):
        raise UsageError(
            f"{name!r} is not a corpus name",
            hint="use lower-case letters, digits and hyphens, e.g. hooks-pitfalls",
        )
    return name


def corpus_file(kb: KnowledgeBase, name: str) -> str:
    """The KB-relative path of corpus ``name`` (checked)."""
    rel = f"{CORPORA_DIR}/{check_name(name)}.md"
    kb.resolve(rel, under=CORPORA_DIR)
    return rel


def corpus_names(kb: KnowledgeBase) -> list[str]:
    folder = kb.root / CORPORA_DIR
    if not folder.is_dir():
        return []
    return sorted(
        p.stem
        for p in folder.glob("*.md")
        if p.is_file() and not p.is_symlink() and _NAME.fullmatch(p.stem)
    )


def read_corpus(kb: KnowledgeBase, name: str) -> Corpus:
    """Corpus ``name``; NotFoundError naming the corpora there are when it is not one."""
    rel = corpus_file(kb, name)
    path = kb.root / rel
    if not path.is_file():
        known = corpus_names(kb)
        listed = ", ".join(known) if known else "none yet"
        raise NotFoundError(
            f"No corpus {name!r} (corpora: {listed})",
            hint="kb-ai corpus list shows them; kb-ai corpus build NAME makes one",
        )
    meta, _ = load_document(path.read_text(encoding="utf-8"), rel)
    raw = meta.get("filter") if isinstance(meta.get("filter"), dict) else {}
    try:
        flt = CorpusFilter(
            types=_strings(raw.get("types")),
            topics=_strings(raw.get("topics")),
            source_kinds=_strings(raw.get("source_kinds")),
            files=_strings(raw.get("files")),
            since=str(raw.get("since") or ""),
            until=str(raw.get("until") or ""),
            query=str(raw.get("query") or ""),
            limit=int(raw.get("limit") or 0),
        )
    except (UsageError, ValueError) as exc:
        raise KbAiError(
            f"{rel}: its filter does not read: {exc}",
            hint="fix it by hand, or rm and build it again",
        ) from exc
    return Corpus(
        name=name,
        filter=flt,
        articles=_strings(meta.get("articles")),
        built=str(meta.get("built") or ""),
        description=str(meta.get("description") or ""),
    )


def write_corpus(kb: KnowledgeBase, corpus: Corpus) -> str:
    """Write ``corpus`` atomically; returns its KB-relative path."""
    rel = corpus_file(kb, corpus.name)
    meta = {
        "name": corpus.name,
        "description": corpus.description,
        "filter": corpus.filter.as_dict(),
        "built": corpus.built,
        "articles": list(corpus.articles),
    }
    lines = [f"# Corpus {corpus.name}", ""]
    if corpus.description:
        lines += [corpus.description, ""]
    lines += [f"{len(corpus.articles)} article(s): {corpus.filter.describe()}.", ""]
    for path in corpus.articles:
        title = corpus.titles.get(path) or path.rsplit("/", 1)[-1].removesuffix(".md")
        lines.append(f"- [{title}](../{path})")
    (kb.root / CORPORA_DIR).mkdir(exist_ok=True)
    atomic_write_text(kb.root / rel, dump_document(meta, "\n".join(lines) + "\n"))
    return rel


def _strings(value: object) -> tuple[str, ...]:
    if isinstance(value, list):
        return tuple(str(v) for v in value if str(v).strip())
    return (str(value),) if isinstance(value, str) and value.strip() else ()
