"""The plan stage: the material of every source, grouped by the article it goes into,
in input order; the first creator of a subject wins."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from compiler.classify import Target
from compiler.dating import source_date
from compiler.state import Plan, PlannedArticle, Work
from compiler.write import Material
from wiki import slug_of


def plan_articles(work: Sequence[Work], existing: Iterable[str]) -> Plan:
    """The articles ``work`` writes. An article a source fed before and feeds no longer
    is planned too (with no new material), and named in the plan's ``dropped``."""
    existing = set(existing)
    targets: dict[str, Target] = {}
    material: dict[str, list[Material]] = {}
    sources: dict[str, list[int]] = {}
    dropped: dict[str, set[str]] = {}
    by_slug: dict[str, str] = {slug_of(p): p for p in existing}

    def plan(path: str, target: Target) -> None:
        if path not in targets:
            targets[path], material[path], sources[path] = target, [], []

    for i, w in enumerate(work):
        if not w.usable:
            continue
        assert w.extraction is not None
        text = w.extraction.to_markdown()
        when = source_date(w.source.text, w.source.origin, datetime.now(UTC).isoformat())
        for old in w.previous_articles:  # fed before, not now: the source leaves it
            if old in existing and all(t.path != old for t in w.targets):
                dropped.setdefault(old, set()).add(w.raw_path)
                plan(old, Target(old, "", "", exists=True))
        for t in w.targets:
            path = by_slug.setdefault(slug_of(t.path), t.path)
            if path != t.path or (path in targets and not t.exists):
                t = targets[path] if path in targets else Target(path, t.title, t.type, True)
            revised = w.previous_text is not None and path in w.previous_articles
            plan(path, t)
            material[path].append(
                Material(
                    w.raw_path,
                    text,
                    revised,
                    w.previous_text if revised else None,
                    when.date,
                    when.stated,
                )
            )
            sources[path].append(i)
    return Plan(
        {p: PlannedArticle(t, tuple(material[p]), tuple(sources[p])) for p, t in targets.items()},
        {p: frozenset(raws) for p, raws in dropped.items()},
    )
