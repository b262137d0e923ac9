"""Watching folders: compile them once, then compile what changes, as it changes
(changes are gathered for a moment first, so saving ten files is one run). A deleted
file is reported, not acted on: its articles stay until someone removes them."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.discover import TEXT_EXTENSIONS, TRANSCRIPT_EXTENSIONS
from compiler.documents import DOCUMENT_EXTENSIONS
from compiler.result import CompileResult
from compiler.run import Compiler
from kb_ai.settings import Settings
from wiki import KnowledgeBase

WATCHED_SUFFIXES = TEXT_EXTENSIONS | DOCUMENT_EXTENSIONS | TRANSCRIPT_EXTENSIONS


@dataclass
class Round:
    """One compile of the watch: the first (everything) or one batch of changes."""

    result: CompileResult | None
    changed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    first: bool = False


def split_changes(changes: Iterable[tuple[Any, str]]) -> tuple[list[str], list[str]]:
    """(files to compile, files deleted), each sorted; a file is deleted when its last
    change is a delete and it is gone."""
    from watchfiles import Change

    touched: dict[str, Any] = {}
    for change, path in changes:
        touched[path] = change
    changed = sorted(p for p, c in touched.items() if c != Change.deleted and Path(p).is_file())
    deleted = sorted(p for p, c in touched.items() if c == Change.deleted and not Path(p).exists())
    return changed, deleted


def watch_filter(kb_root: Path) -> Callable[[Any, str], bool]:
    """Files kb-ai compiles, outside the knowledge base itself and hidden folders."""
    from watchfiles import DefaultFilter

    base = DefaultFilter()
    kb = kb_root.resolve()

    def wanted(change: Any, path: str) -> bool:
        p = Path(path)
        if not base(change, path) or p.suffix.lower() not in WATCHED_SUFFIXES:
            return False
        if any(part.startswith(".") and part not in (".", "..") for part in p.parts):
            return False  # a hidden folder or file (a "../notes" watched is not one)
        return kb != p.resolve() and kb not in p.resolve().parents

    return wanted


async def watch_and_compile(
    kb: KnowledgeBase,
    settings: Settings,
    paths: Sequence[str],
    on_round: Callable[[Round], None],
    *,
    debounce_ms: int = 1000,
    stop_event: Any = None,
    compiler_factory: Callable[[], Compiler] | None = None,
    force_polling: bool | None = None,
) -> None:
    """Compile ``paths`` once, then every batch of changes under them, until stopped
    (``stop_event`` set, or the task cancelled by Ctrl-C)."""
    from watchfiles import awatch

    stop = stop_event or asyncio.Event()

    def arm() -> None:
        """Ctrl-C between compiles ends the watch quietly (during one, the compile takes
        it: what finished is committed, and the watch ends after it)."""
        if threading.current_thread() is threading.main_thread():
            with suppress(NotImplementedError, RuntimeError):
                asyncio.get_running_loop().add_signal_handler(signal.SIGINT, stop.set)

    async def compile_once(targets: Sequence[str]) -> CompileResult:
        compiler = compiler_factory() if compiler_factory else Compiler(kb, settings)
        result = await compiler.compile_paths(targets)
        if compiler.interrupted:
            stop.set()
        arm()
        return result

    arm()
    on_round(Round(await compile_once(paths), first=True))
    if stop.is_set():
        return
    async for changes in awatch(
        *paths,
        watch_filter=watch_filter(kb.root),
        debounce=debounce_ms,
        stop_event=stop,
        force_polling=force_polling,
    ):
        changed, deleted = split_changes(changes)
        result = await compile_once(changed) if changed else None
        on_round(Round(result, changed, deleted))
        if stop.is_set():
            return
