"""What identity changes in a run after a source got its raw slug (compiler/allocate.py):
a revision keeps feeding the article it fed, and the raw copy a revision replaced is
retired after the run."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from compiler.classify import Target
from compiler.result import CompileResult
from compiler.state import Work
from kb_ai.llm import LLM
from kb_ai.settings import Settings
from wiki import KnowledgeBase


def keep_articles(
    w: Work, targets: Sequence[Target], by_path: Mapping[str, Any]
) -> tuple[Target, ...]:
    """A revision that fed one article keeps feeding it: a new article classify
    proposes instead (a retitled revision) is that article, so its path stays. So does
    the same file revised where it is while its text is still like what it was (a file
    rewritten on another subject leaves its article), and a document that may revise a
    source (its text in between, a new source the run names): a new article classify
    proposes is that source's article, so a revision nobody has confirmed yet still
    adds no second article on its subject (compiler/allocate.py sets ``alike``)."""
    targets = tuple(targets)
    if w.revision and len(w.previous_articles) == 1:
        (old,) = w.previous_articles
    elif len(w.alike) == 1:
        (old,) = w.alike
    else:
        return targets
    entry = by_path.get(old)
    if entry is None or any(t.path == old for t in targets):
        return targets
    new = [t for t in targets if not t.exists]
    if not new:
        return targets
    kept = Target(old, entry.title, entry.type, exists=True)
    return tuple(kept if t is new[0] else t for t in targets)


async def retire_superseded(
    kb: KnowledgeBase,
    settings: Settings,
    result: CompileResult,
    llm_factory: Callable[..., LLM],
    started_by: str,
    *,
    held: bool = False,
) -> str | None:
    """Remove the raw copies the run's revisions replaced (a document first compiled as
    a new source, then said to revise another): their articles lose them, in a commit
    of its own after the run's (not while the run is ``held`` for review). Returns the
    commit the run ends at."""
    from compiler.removal import Removed, remove_sources

    if not result.superseded or not result.commit or held:
        return result.commit
    # (the origin is a label: the file compiled into it now feeds the source it revises)
    gone = [Removed(f"its document, now {new}", old) for old, new in result.superseded]
    removal = await remove_sources(
        kb, settings, gone, reason="a revision of another source replaced it",
        llm_factory=llm_factory, started_by=started_by,
    )  # fmt: skip
    return removal.commit or result.commit
