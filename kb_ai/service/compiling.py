"""Compile, remove and prune through the application layer: each run writes through the
knowledge base acting as the actor, so its commit has the actor as author."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from compiler import Compiler
from compiler.removal import RemoveResult, find_sources, prune_folders, remove_sources
from compiler.result import CompileResult
from compiler.worker import Worker
from kb_ai.service.opened import OpenKb
from kb_ai.service.people import audit
from kb_ai.service.remote import publish

ProgressFn = Callable[..., None]

#: what Status shows as a run's starter, by the kind of actor
STARTED_BY = {"cli": "cli", "web": "web", "person": "web", "agent": "agent hook"}


def compiler(okb: OpenKb, *, progress: ProgressFn | None = None) -> Compiler:
    """A compiler for one run by ``okb``'s actor (``interrupt()`` stops it)."""
    return Compiler(
        okb.kb,
        okb.settings,
        llm_factory=okb.llm_factory,
        progress=progress,
        started_by=STARTED_BY.get(okb.actor.kind, okb.actor.kind),
    )


async def compile_paths(
    okb: OpenKb,
    paths: Iterable[str | Path],
    *,
    force: bool = False,
    progress: ProgressFn | None = None,
    revises: str = "",
) -> CompileResult:
    """Compile files, folders and URLs in one run (one commit, authored by the actor);
    ``revises``: the id of the source the one document given revises."""
    paths = list(paths)
    okb.note("compile", ", ".join(map(str, paths))[:200])
    return await compiler(okb, progress=progress).compile_paths(paths, force=force, revises=revises)


def worker(okb: OpenKb, **options: Any) -> Worker:
    """A queue worker over ``okb`` (options: batch, poll_seconds, lease_seconds, owner).
    Each task is compiled as the actor who submitted it; what no one submitted (agent
    captures from the spool), as ``okb``'s actor."""
    return Worker(okb.kb, okb.settings, llm_factory=okb.llm_factory, **options)


async def remove(
    okb: OpenKb, specs: Sequence[str], *, reason: str, address: str = "cli"
) -> RemoveResult:
    """Take the sources ``specs`` name out of the wiki, in one commit by the actor, and
    say so in the audit log (``address``: where the request came from)."""
    okb.note("remove", ", ".join(specs)[:200])
    found = await asyncio.to_thread(find_sources, okb.kb, specs)
    result = await remove_sources(
        okb.kb,
        okb.settings,
        found,
        reason=reason,
        llm_factory=okb.llm_factory,
        started_by=STARTED_BY.get(okb.actor.kind, okb.actor.kind),
    )
    if result.removed:
        gone = ", ".join(r.raw_path for r in result.removed)
        detail = f"{len(result.deleted)} article(s) deleted"
        await asyncio.to_thread(audit, okb, "remove", gone[:500], detail, address)
    await asyncio.to_thread(publish, okb)
    return result


async def prune(okb: OpenKb, folders: Sequence[str | Path]) -> list[RemoveResult]:
    """Remove the sources gone from each of ``folders`` (a commit per folder)."""
    okb.note("prune", ", ".join(map(str, folders))[:200])
    results = await prune_folders(okb.kb, okb.settings, folders, llm_factory=okb.llm_factory)
    await asyncio.to_thread(publish, okb)
    return results


async def watch(
    okb: OpenKb,
    folders: Sequence[str],
    on_round: Callable[[Any], None],
    *,
    debounce_ms: int = 1000,
) -> None:
    """Compile ``folders`` once, then each batch of changes in them (a run and a commit
    each, by the actor), until Ctrl-C."""
    from compiler.watch import watch_and_compile

    okb.note("watch", ", ".join(folders)[:200])
    await watch_and_compile(
        okb.kb,
        okb.settings,
        list(folders),
        on_round,
        debounce_ms=debounce_ms,
        compiler_factory=lambda: compiler(okb),
    )
