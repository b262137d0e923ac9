"""What a state.db made again can get back from the knowledge base itself.

state.db is not versioned, so a deleted or replaced one loses what only it knew. What
the files still say is put back at once, when the missing file is found (wiki/state.py):
each source in raw/ with its checksum, the model and prompt of its extraction and the
articles that cite it, so the next compile skips what is unchanged instead of paying for
every source again. The queue comes back from the inbox (compiler/queue.py), the search
index with the first question. Chat sessions, the run history, the model call log and
the response cache are gone: the loss is noted for the log, `kb-ai status` and Status.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kb_ai.errors import KbAiError
from wiki.articles import list_articles, read_article
from wiki.extraction import read_extraction
from wiki.layout import KnowledgeBase
from wiki.raw import list_raw, read_raw

__all__ = ["LOST", "KnownSource", "sources_on_disk"]

#: What a state.db made again cannot get back from the knowledge base.
LOST = "chat sessions, the run history, the model call log and the response cache"
UNCONFIRMED = (
    "state.db was rebuilt and this source's compile could not be confirmed: compile it again"
)


@dataclass(frozen=True)
class KnownSource:
    """A source's state row as the files tell it."""

    origin: str
    raw_path: str
    checksum: str
    model: str | None
    prompt_version: str | None
    error: str | None  # None: compiled (an article cites it, its extraction is current)
    ingested_at: str | None
    articles: list[str] = field(default_factory=list)


def sources_on_disk(kb: KnowledgeBase) -> list[KnownSource]:
    """Every raw source, counted as compiled when an article cites it and its extraction
    is of the same checksum."""
    cited: dict[str, list[str]] = {}
    for rel in list_articles(kb):
        try:
            article = read_article(kb, rel)
        except (KbAiError, UnicodeDecodeError):  # a broken article: lint reports it
            continue
        for source in article.sources:
            cited.setdefault(source, []).append(rel)
    known = []
    for rel in list_raw(kb):
        try:
            raw = read_raw(kb, rel)
        except (KbAiError, UnicodeDecodeError):
            continue
        model = version = None
        if (kb.extraction_dir / f"{raw.slug}.md").is_file():
            try:
                record = read_extraction(kb, f"extraction/{raw.slug}.md")
            except (KbAiError, UnicodeDecodeError):
                record = None
            if record is not None and record.source_checksum == raw.checksum:
                model, version = record.model or None, record.prompt_version or None
        articles = sorted(cited.get(rel, []))
        known.append(
            KnownSource(
                origin=raw.origin or rel,
                raw_path=rel,
                checksum=raw.checksum,
                model=model,
                prompt_version=version,
                error=None if articles and version else UNCONFIRMED,
                ingested_at=raw.ingested_at or None,
                articles=articles,
            )
        )
    return known
