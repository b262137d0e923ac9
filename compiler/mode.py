"""How a run turns sources into articles, chosen once per run (``choose_mode``):

- ``ComposedArticles``: the model extracts each source, classifies its material into
  articles, and writes each article from the material of all its sources;
- ``SourceArticles`` (a small model: local, or ``small_model = true``): the model only
  names each source; each source is one article in its own words, placed in input
  order once all are named (compiler/source_article.py).

The stages ask the mode and never look at the settings for it again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from compiler.classify import CatalogRanker, Target, classify_source
from compiler.extract import Extraction, extract_source
from compiler.revisions import keep_articles
from compiler.source_article import name_source, own_source, source_article, source_targets
from compiler.sources import Source
from compiler.state import Work
from compiler.write import Material, compile_article
from kb_ai.llm import LLM
from kb_ai.prompts import PromptLibrary
from kb_ai.settings import Settings
from wiki import Article, CatalogEntry

PROMPTS = PromptLibrary(Path(__file__).parent / "prompts")


def extraction_version(small: bool = False) -> str:
    """The version of the extract prompts (notes and transcripts, or a small model's
    naming prompt): a change to one is lag."""
    if small:
        return "small-" + PROMPTS.version("extract_small")[:12]
    return PROMPTS.version("extract")[:6] + PROMPTS.version("extract_transcript")[:6]


class ComposedArticles:
    """The model extracts, classifies and writes."""

    classifies = True  # each source is classified as soon as it is extracted
    composes = True  # articles are written from material (a person's lines among it)

    def __init__(self, settings: Settings, categories: Sequence[str]) -> None:
        self.settings = settings
        self.categories = list(categories)
        self.version = extraction_version(False)

    async def extract(self, llm: LLM, source: Source) -> Extraction:
        return await extract_source(llm, PROMPTS, source)

    async def classify(self, llm: LLM, w: Work, ranker: CatalogRanker) -> tuple[Target, ...]:
        assert w.extraction is not None
        targets = await classify_source(
            llm,
            PROMPTS,
            source_title=w.source.title,
            extraction=w.extraction,
            ranker=ranker,
            categories=self.categories,
            budget_chars=self.settings.catalog_budget_chars,
            max_new=self.settings.max_new_articles_per_source,
        )
        return keep_articles(w, targets, ranker.by_path)  # a revision keeps its article

    def place(self, work: Sequence[Work], existing: Mapping[str, CatalogEntry]) -> tuple[Work, ...]:
        """The work with its targets (classify set them already)."""
        return tuple(work)

    async def write(
        self,
        llm: LLM,
        target: Target,
        material: Sequence[Material],
        existing: Article | None,
        notes: list[str],
        work: Mapping[str, Work],
    ) -> Article:
        return await compile_article(
            llm,
            PROMPTS,
            target,
            list(material),
            existing,
            patch_threshold=self.settings.patch_threshold_chars,
            notes=notes,
            material_chars=self.settings.write_material_chars,
            prompt_chars=self.settings.max_prompt_chars,
        )


class SourceArticles(ComposedArticles):
    """The model names each source; its text is the article."""

    classifies = False  # targets are set in input order once all are named
    composes = False  # an article is its source's own text

    def __init__(self, settings: Settings, categories: Sequence[str]) -> None:
        super().__init__(settings, categories)
        self.version = extraction_version(True)

    async def extract(self, llm: LLM, source: Source) -> Extraction:
        return await name_source(llm, PROMPTS, source, self.categories)

    def place(self, work: Sequence[Work], existing: Mapping[str, CatalogEntry]) -> tuple[Work, ...]:
        """One article per source, in input order."""
        targets = source_targets(work, existing, self.categories)
        return tuple(replace(w, targets=targets[i]) if i in targets else w
                     for i, w in enumerate(work))  # fmt: skip

    async def write(
        self,
        llm: LLM,
        target: Target,
        material: Sequence[Material],
        existing: Article | None,
        notes: list[str],
        work: Mapping[str, Work],
    ) -> Article:
        own = own_source(work, material, existing)
        if own is None:  # fed by more sources (written by a larger model before): merged
            return await super().write(llm, target, material, existing, notes, work)
        return source_article(own, target, existing, notes)


def choose_mode(settings: Settings, categories: Sequence[str] = ()) -> ComposedArticles:
    """The run's mode: a small model names sources, any other model composes articles.
    (No categories: a mode to ask its version, as ``kb-ai status`` does, not to run.)"""
    small = settings.writes_from_sources
    return (SourceArticles if small else ComposedArticles)(settings, categories)
