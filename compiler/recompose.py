"""Revision: an article a revised source fed is written again from the current material
of all its sources, not patched on top of its old text (and so is any short article a
run touches: the writer then sees every source with its date, and can put the newest
fact first and older ones in a dated history line).

Merging a revised source's new extraction into the old article kept whatever the old
version alone had said. Instead, when a source an article draws on has changed (or no
longer feeds it), the article's material is the stored extraction of every source it
has now (the revised one as it is now, the others as stored under extraction/), and a
short article is written afresh from that material alone, so a statement only the old
version supported has nothing left to come from. A long article keeps the section-patch
route (its untouched sections stay byte for byte), with the whole material, and a patch
may remove a section as well as add one. A source that no longer feeds an article leaves
its ``sources``; an article with no source left is deleted.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from compiler.classify import Target
from compiler.dating import source_date
from compiler.documents.citations import base_path
from compiler.extract import Extraction
from compiler.result import Deletion
from compiler.write import Material
from kb_ai.errors import KbAiError
from wiki import Article, KnowledgeBase, delete_article, read_extraction, read_raw

#: A short article is written from all its sources while their material stays within
#: this many times the patch threshold (12,000 characters by default: 48,000).
MATERIAL_FACTOR = 4


@dataclass(frozen=True)
class Rewrite:
    """What the writer gets for a revised article: ``existing`` is None for a fresh
    rewrite; ``material`` is empty when no source is left (the article goes)."""

    target: Target
    material: list[Material]
    existing: Article | None
    previous: Article

    def finish(self, article: Article) -> Article:
        """The written article keeps its path, title, type and creation date."""
        return replace(
            article,
            path=self.previous.path,
            title=self.previous.title,
            type=self.previous.type,
            created=self.previous.created or article.created,
        )


def needs_rewrite(
    existing: Article, material: list[Material], dropped: set[str], patch_threshold: int
) -> bool:
    """Whether an existing article is to be written from all its sources again: always
    when it is short (the writer then weighs every source by its date), and a long one
    when a source of it was revised or left it."""
    short = len(existing.body) <= patch_threshold
    return short or bool(dropped) or any(m.revised for m in material)


def plan_rewrite(
    kb: KnowledgeBase,
    existing: Article,
    material: list[Material],
    dropped: set[str],
    patch_threshold: int,
) -> Rewrite | None:
    """The material of every source ``existing`` keeps, and how it is to be written.

    None when nothing was revised or dropped and the whole material would be larger
    than ``MATERIAL_FACTOR`` times the patch threshold (a hub article fed by many
    sources): the new material is then merged into the article as it is."""
    given = {m.source for m in material}
    full = [m for m in material if m.source not in dropped]
    for source in (base_path(e) for e in existing.sources):  # "raw/x.md#pages=3-5"
        if source in given or source in dropped:
            continue
        stored = stored_source(kb, source)
        if stored is not None:
            full.append(stored)
    forced = bool(dropped) or any(m.revised for m in material)
    if not forced and sum(len(m.text) for m in full) > MATERIAL_FACTOR * patch_threshold:
        return None
    target = Target(existing.path, existing.title, existing.type, exists=True)
    if len(existing.body) > patch_threshold:
        kept = [s for s in existing.sources if base_path(s) not in dropped]
        return Rewrite(target, full, replace(existing, sources=kept), existing)
    # no old text to take anything out of
    fresh = [Material(m.source, m.text, date=m.date, dated=m.dated) for m in full]
    return Rewrite(target, fresh, None, existing)


def stored_source(kb: KnowledgeBase, source: str) -> Material | None:
    """``source`` ("raw/<slug>.md") as material: its stored extraction, dated from its
    raw copy; None when the extraction is unreadable."""
    source = base_path(source)  # a sources entry may name pages: "raw/x.md#pages=3-5"
    slug = source.removeprefix("raw/").removesuffix(".md")
    try:
        data = read_extraction(kb, f"extraction/{slug}.md").data
    except (KbAiError, OSError, UnicodeDecodeError):
        return None
    text = Extraction.from_data(data).to_markdown()
    try:
        raw = read_raw(kb, source)
    except (KbAiError, OSError, UnicodeDecodeError):
        return Material(source, text)
    when = source_date(raw.text, raw.origin, raw.ingested_at)
    return Material(source, text, date=when.date, dated=when.stated)


def delete_left(
    kb: KnowledgeBase, article: Article, dropped: set[str], origins: dict[str, str]
) -> Deletion:
    """Delete ``article``: the sources in ``dropped`` left it and it has no other
    (``origins``: raw path -> the file it was compiled from, to name them).

    One that still names other sources, whose stored extractions cannot be read,
    is kept: an error, not a deletion (its sources can be compiled again)."""
    kept = [s for s in article.sources if s not in dropped]
    if kept:
        raise KbAiError(
            f"{article.path}: none of its other sources ({', '.join(kept)}) has a"
            " readable extraction, so it cannot be written without the one that left it",
            hint="recompile those sources with `kb-ai compile --force`",
        )
    delete_article(kb, article.path)
    return Deletion(article.path, tuple((raw, origins.get(raw, raw)) for raw in sorted(dropped)))
