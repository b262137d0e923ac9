"""What a compile run carries from stage to stage, as values: each source's work, the
plan of articles, what the write stage stored, and the run state that holds them.

Every stage takes a RunState and returns a new one (``dataclasses.replace``); nothing
here is changed in place once made, so what a stage saw is what the stage before it
returned, whichever call finished first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from compiler.classify import Target
from compiler.extract import Extraction
from compiler.hand_edits import Held
from compiler.identity_index import Arrival
from compiler.result import CompileResult
from compiler.sources import Source
from compiler.write import Material
from wiki import Article, CatalogEntry


@dataclass(frozen=True)
class Recorded:
    """What recording a run changes besides its articles, as it was just before (put
    back by compiler/recovery.py when the run loses the compile lock before its commit)."""

    sources: Mapping[str, dict[str, Any] | None]  # origin -> its row, None: not known
    meta: Mapping[str, str | None]  # state.db meta keys the recording sets
    files: Mapping[str, bytes | None]  # KB-relative path -> its bytes, None: absent
    folders: tuple[str, ...] = ()  # folders of which only the files in ``wrote`` are the run's
    wrote: Mapping[str, bytes] = field(default_factory=dict)  # in them: path -> what it wrote


@dataclass(frozen=True)
class Skipped:
    """An agent session with nothing to compile now, and why."""

    key: str
    reason: str


@dataclass(frozen=True)
class Unread:
    """A changed datum, hashed but not read yet: read when the run reaches it, with the
    sources state.db knows then (``read(known)``)."""

    origin: str
    checksum: str
    read: Callable[[Mapping[str, Any]], Source | Skipped]


Pending = Source | Unread


@dataclass(frozen=True)
class Work:
    """One source on its way through extract and classify."""

    source: Source
    slug: str
    raw_path: str
    previous_articles: tuple[str, ...]  # the articles it fed when it compiled before
    previous_text: str | None = None  # its earlier extraction, when the source changed
    extraction: Extraction | None = None
    targets: tuple[Target, ...] = ()
    error: str | None = None
    revision: bool = False  # a revision of a source compiled from elsewhere (identity)
    # the article its text is on the subject of: the one of the source it may revise (a
    # new source in between, named), or its own (the same file revised, still alike)
    alike: tuple[str, ...] = ()

    @property
    def usable(self) -> bool:
        """Whether it reached the plan: extracted, without an error."""
        return self.error is None and self.extraction is not None


@dataclass(frozen=True)
class PlannedArticle:
    """One article to write: where, from which material, fed by which sources."""

    target: Target
    material: tuple[Material, ...] = ()
    sources: tuple[int, ...] = ()  # indexes into the run's work


@dataclass(frozen=True)
class Plan:
    """The articles to write, by path in input order, and the articles a revised source
    no longer feeds: path -> the raw paths that left it."""

    articles: Mapping[str, PlannedArticle] = field(default_factory=dict)
    dropped: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def articles_of(self, index: int) -> list[str]:
        """The paths the source at ``index`` of the work feeds."""
        return [p for p, a in self.articles.items() if index in a.sources]


@dataclass(frozen=True)
class RunState:
    """The run so far. Stages fill it in order: intake (pending), extract and classify
    (work), plan, write (written, errors, held), index and commit (result)."""

    result: CompileResult
    known: Mapping[str, Any]  # state.db's sources by origin, as the run started
    pending: tuple[Pending, ...] = ()
    catalog: tuple[CatalogEntry, ...] = ()  # the wiki's articles as the run started
    catalog_ns: int = 0  # articles changed after this are read again by the index stage
    work: tuple[Work, ...] = ()
    plan: Plan = field(default_factory=Plan)
    written: Mapping[str, Article] = field(default_factory=dict)  # stored, by path
    article_errors: Mapping[str, str] = field(default_factory=dict)  # by path
    arrivals: Mapping[str, Arrival] = field(default_factory=dict)  # by origin (identity)
    held: tuple[Held, ...] = ()  # articles whose new version meets a person's change
    hand_merged: tuple[str, ...] = ()  # articles stored merged into a person's change
    # what recording the run changed, as it was before (put back if the lock is lost)
    recorded: Recorded | None = None

    @property
    def origins(self) -> dict[str, str]:
        """raw path -> the file each source of the run was compiled from."""
        return {w.raw_path: w.source.origin for w in self.work}
