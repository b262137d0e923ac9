"""Removing sources: `kb-ai rm`, `kb-ai compile --prune`, the web UI's Delete button.

What a removed source said leaves every article: each article it fed is rewritten from
the stored extractions of the sources it has left (never patched, so nothing only the
removed source stated survives), and an article with no source left is deleted, not
emptied. Every rewrite is asked of the model first; only when all succeeded is anything
written, so a failure leaves the wiki as it was. Then the raw copies and extractions
go, the indexes and search tables follow, and one commit says what went and why.
"""

from __future__ import annotations

import asyncio
import fnmatch
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from contextlib import closing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from compiler.classify import Target
from compiler.documents.citations import base_path
from compiler.hand_edits import Held, Look, hold_deletion, look_at, person_material, store_merged
from compiler.links import LinkTargets, link_mentions
from compiler.origins import file_of
from compiler.recompose import stored_source
from compiler.record import INDEX_FINGERPRINT
from compiler.redact import redact_name
from compiler.review import hold_hand_edits
from compiler.runs import RunTracker
from compiler.write import compile_article
from kb_ai.errors import KbAiError, UsageError
from kb_ai.llm import LLM, Usage, open_llm
from kb_ai.prompts import PromptLibrary
from kb_ai.settings import Settings
from wiki import (
    Article,
    KnowledgeBase,
    all_sources,
    append_log,
    commit_all,
    current_catalog,
    delete_article,
    get_meta,
    list_articles,
    open_state,
    read_article,
    read_raw,
    set_meta,
    write_indexes,
)
from wiki.indexing import refresh_search_index, remove_from_tables
from wiki.lock import compile_lock
from wiki.state import delete_source, set_source_articles, source_articles

PROMPTS = PromptLibrary(Path(__file__).parent / "prompts")


@dataclass(frozen=True)
class Removed:
    """A source to remove: its origin (as compiled) and its raw copy."""

    origin: str
    raw_path: str


@dataclass
class RemoveResult:
    removed: list[Removed] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)  # articles with no source left
    rewritten: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)  # rewrites meeting a hand edit (review)
    held_review: str | None = None
    commit: str | None = None
    usage: Usage = field(default_factory=Usage)

    def as_dict(self) -> dict[str, Any]:
        return {
            "removed": [{"origin": r.origin, "raw_path": r.raw_path} for r in self.removed],
            "deleted": self.deleted,
            "rewritten": self.rewritten,
            "held": self.held,
            "held_review": self.held_review,
            "commit": self.commit,
            "usage": self.usage.as_dict(),
        }


def find_sources(kb: KnowledgeBase, specs: Sequence[str]) -> list[Removed]:
    """The compiled sources ``specs`` name: a path (as compiled, or as it was), a raw/
    path or slug, or a glob over either. A spec that names nothing is an error, and then
    nothing is removed."""
    with closing(open_state(kb)) as conn:
        rows = all_sources(conn)
    known = {origin: row["raw_path"] for origin, row in rows.items() if row["raw_path"]}
    for rel in _raw_files(kb):  # a raw copy no state row records (a state.db lost)
        if rel not in known.values():
            known[rel] = rel
    found: dict[str, Removed] = {}
    unmatched = []
    for spec in specs:
        hits = [Removed(o, r) for o, r in known.items() if _matches(spec, o, r)]
        if not hits:
            unmatched.append(spec)
        for hit in hits:
            found.setdefault(hit.raw_path, hit)
    if unmatched:
        raise UsageError(
            f"no compiled source matches {', '.join(repr(s) for s in unmatched)}",
            hint="name a file as it was compiled, a raw/ path or slug, or a glob"
            " (`kb-ai status` and raw/ list them)",
        )
    return sorted(found.values(), key=lambda r: r.raw_path)


def _matches(spec: str, origin: str, raw_path: str) -> bool:
    slug = raw_path.removeprefix("raw/").removesuffix(".md")
    candidates = {spec, str(Path(spec).expanduser().absolute())}
    if not Path(spec).is_absolute():
        candidates.add(str(Path(spec).expanduser().resolve()))
    candidates |= {redact_name(c) for c in candidates}  # as compiled: secrets redacted
    if origin in candidates or raw_path in candidates or slug == spec:
        return True
    if any(ch in spec for ch in "*?["):
        absolute = str(Path(spec).expanduser().absolute())
        return any(
            fnmatch.fnmatchcase(value, pattern)
            for value in (origin, raw_path, slug)
            for pattern in {spec, absolute}
        )
    return False


def _raw_files(kb: KnowledgeBase) -> list[str]:
    if not kb.raw_dir.is_dir():
        return []
    return sorted(f"raw/{p.name}" for p in kb.raw_dir.glob("*.md"))


def missing_under(kb: KnowledgeBase, folder: str | Path) -> list[Removed]:
    """The sources compiled from files under ``folder`` that are no longer there."""
    base = Path(folder).expanduser().resolve()
    with closing(open_state(kb)) as conn:
        rows = all_sources(conn)
    gone = []
    for origin, row in sorted(rows.items()):
        path = Path(origin)
        under = path.is_absolute() and path.is_relative_to(redact_name(str(base)))
        if row["raw_path"] and under and file_of(origin) is None:
            gone.append(Removed(origin, row["raw_path"]))
    return gone


async def prune_folders(
    kb: KnowledgeBase,
    settings: Settings,
    folders: Sequence[str | Path],
    *,
    llm_factory: Callable[..., LLM] = open_llm,
) -> list[RemoveResult]:
    """Remove the sources gone from each of ``folders`` (one commit per folder)."""
    results = []
    for folder in folders:
        if Path(folder).is_dir() and (gone := missing_under(kb, folder)):
            results.append(
                await remove_sources(
                    kb, settings, gone, reason=f"gone from {folder}", llm_factory=llm_factory
                )
            )
    return results


async def remove_sources(
    kb: KnowledgeBase,
    settings: Settings,
    removed: Sequence[Removed],
    *,
    reason: str,
    llm_factory: Callable[..., LLM] = open_llm,
    started_by: str = "cli",
) -> RemoveResult:
    """Take ``removed`` out of the wiki (see the module's docstring); one commit, one
    run on Status (``started_by``: cli, web)."""
    result = RemoveResult(removed=list(removed))
    if not removed:
        return result
    lock = compile_lock(kb)
    await asyncio.to_thread(lock.acquire)
    # Status lists it beside the compiles: what went, and the articles it deleted.
    run = RunTracker(kb, started_by, lambda *a, **k: None)
    summary: dict[str, Any] = {"removed": [r.origin for r in removed]}
    held: list[Held] = []
    try:
        run.start(len(removed))
        await _remove(kb, settings, result, reason, llm_factory, held)
    except BaseException as exc:
        stopped = isinstance(exc, (KeyboardInterrupt, asyncio.CancelledError))
        run.finish("interrupted" if stopped else "failed", {**summary, "error": str(exc)}, None)
        raise
    else:
        summary["deleted"] = [{"path": p} for p in result.deleted]
        summary["updated"] = result.rewritten
        run.finish("done", summary, result.commit)
    finally:
        lock.release()
    if held:  # a person's version stays on main; the rewrite waits beside it
        result.held_review = await asyncio.to_thread(hold_hand_edits, kb, run.run_id or "rm", held)
    return result


async def _remove(
    kb: KnowledgeBase,
    settings: Settings,
    result: RemoveResult,
    reason: str,
    llm_factory: Callable[..., LLM],
    held: list[Held],
) -> None:
    gone = {r.raw_path for r in result.removed}
    fed = [a for a in _articles(kb) if gone & _raw_paths(a)]
    to_rewrite = [a for a in fed if _raw_paths(a) - gone]
    for a in fed:  # no source left: deleted, unless it holds a person's lines (review)
        if not _raw_paths(a) - gone:
            left = ", ".join(sorted(_raw_paths(a) & gone))
            hold = hold_deletion(look_at(kb, a.path), a.path, left)
            if hold is not None:
                held.append(hold)
            else:
                result.deleted.append(a.path)
    result.deleted.sort()
    rewritten: list[Article] = []
    looks = [look_at(kb, a.path) for a in to_rewrite]  # a person's lines are material too
    if to_rewrite:
        llm = llm_factory(settings, db_path=kb.state_db)
        try:
            with closing(open_state(kb)) as conn:
                fingerprint = get_meta(conn, INDEX_FINGERPRINT)
            catalog = current_catalog(kb, fingerprint)
            targets = LinkTargets.of(
                (e.path, e.title) for e in catalog if e.path not in result.deleted
            )
            rewritten = list(
                await asyncio.gather(
                    *(
                        _rewrite(kb, llm, a, look, gone, settings, targets)
                        for a, look in zip(to_rewrite, looks, strict=True)
                    )
                )
            )
        finally:
            result.usage = llm.usage
            if hasattr(llm, "aclose"):
                await llm.aclose()
    # Every model call succeeded: now the files change, merged with a person's edits.
    written: dict[str, Article] = {}
    for a, look in zip(rewritten, looks, strict=True):
        stored = store_merged(kb, a, look, [])
        if isinstance(stored, Held):
            held.append(stored)
        else:
            written[a.path] = stored.article
    result.rewritten = sorted(written)
    result.held = sorted(h.path for h in held)
    with closing(open_state(kb)) as conn:
        discard(kb, conn, result.deleted, [r.raw_path for r in result.removed])
        refresh_search_index(kb, conn, sorted(written), written)
        gone_raw = {r.raw_path for r in result.removed}
        for origin, row in all_sources(conn).items():  # each origin compiled into it too
            if row["raw_path"] in gone_raw or origin in {r.origin for r in result.removed}:
                delete_source(conn, origin)
        _forget_articles(conn, result.deleted)
    lines = [f"removed {r.raw_path} ({r.origin}): {reason}" for r in result.removed]
    lines += [f"deleted {p} (no source left)" for p in result.deleted]
    lines += [f"rewrote {p} without it" for p in result.rewritten]
    lines += [
        f"held {h.path}: {h.reason if h.deletes else 'its rewrite meets a hand edit'} (review)"
        for h in sorted(held, key=lambda h: h.path)
    ]
    append_log(kb, "rm", lines)
    head = (
        f"rm: {len(result.removed)} source(s) removed, {len(result.deleted)} article(s)"
        f" deleted, {len(result.rewritten)} rewritten"
    )
    result.commit = commit_all(kb, f"{head}\n\nWhy: {reason}\n\n" + "\n".join(lines))


def discard(
    kb: KnowledgeBase, conn: sqlite3.Connection, articles: Sequence[str], raws: Sequence[str]
) -> None:
    """Delete ``articles`` and the raw copies ``raws`` (each with its extraction and the
    original file it was converted from); the master index, the topics and the search
    tables follow. What records the sources in state.db is the caller's to change (a
    removal forgets them, lint --fix points them at the copy it keeps)."""
    for path in articles:
        delete_article(kb, path)
    for raw in raws:
        slug = raw.removeprefix("raw/").removesuffix(".md")
        try:
            original = read_raw(kb, raw).original_path
        except (KbAiError, OSError, UnicodeDecodeError):
            original = ""  # an unreadable copy: its original, if any, is not known
        for rel in (raw, f"extraction/{slug}.md", original):
            if rel and (path := kb.resolve(rel, under="")).is_file():
                path.unlink()
    remove_from_tables(conn, list(articles))
    fingerprint = get_meta(conn, INDEX_FINGERPRINT)
    set_meta(conn, INDEX_FINGERPRINT, write_indexes(kb, current_catalog(kb, fingerprint)))


def _raw_paths(article: Article) -> set[str]:
    """The raw sources of an article (an entry may name pages: "raw/x.md#pages=3-5")."""
    return {base_path(s) for s in article.sources}


def _articles(kb: KnowledgeBase) -> Iterable[Article]:
    for rel in list_articles(kb):
        try:
            yield read_article(kb, rel)
        except (KbAiError, UnicodeDecodeError):
            continue  # `kb-ai lint` reports it; it cannot be rewritten as it is


async def _rewrite(
    kb: KnowledgeBase,
    llm: LLM,
    article: Article,
    look: Look,
    gone: set[str],
    settings: Settings,
    targets: LinkTargets,
) -> Article:
    """``article`` written again from the extractions of the sources it has left (and
    the lines a person wrote in it)."""
    material = [
        m for m in (stored_source(kb, s) for s in _raw_paths(article) - gone) if m is not None
    ]
    if not material:
        raise KbAiError(
            f"{article.path}: none of its other sources has a readable extraction",
            hint=f"recompile its sources with `kb-ai compile --force`, or delete {article.path}",
        )
    person = person_material(look)
    if person is not None:
        material.append(person)
    target = Target(article.path, article.title, article.type, exists=True)
    fresh = await compile_article(
        llm, PROMPTS, target, material, None, patch_threshold=settings.patch_threshold_chars,
        material_chars=settings.write_material_chars, prompt_chars=settings.max_prompt_chars,
    )  # fmt: skip
    body = link_mentions(fresh.body, targets, article.path)
    return replace(fresh, body=body, created=article.created or fresh.created)


def _forget_articles(conn: sqlite3.Connection, deleted: list[str]) -> None:
    """Deleted articles leave the article lists of the sources that remain."""
    gone = set(deleted)
    for origin, row in all_sources(conn).items():
        paths = source_articles(row)
        if gone & set(paths):
            set_source_articles(conn, origin, [p for p in paths if p not in gone])
