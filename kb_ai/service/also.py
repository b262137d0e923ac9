"""The other knowledge bases a question consults (``also`` in kb-ai.toml, ``--also``):
each opened read-only as a shelf (retrieval/shelves.py), a git URL cloned into
``.kb-ai/also/<name>/`` and pulled once it is older than ``also_pull_seconds``.

A folder that is not a knowledge base is a ConfigError (fix the setting); a remote that
cannot be reached leaves that knowledge base out of the answer, with a note saying so,
or answers from the copy already here.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from kb_ai.errors import ConfigError, KbAiError, NotAKnowledgeBaseError
from kb_ai.service.opened import OpenKb
from retrieval.shelves import Shelf
from wiki import KnowledgeBase, slugify
from wiki.files import atomic_write_text
from wiki.mirror import is_git_url, mirror

log = logging.getLogger("kb_ai.service")
SHELVES = "shelves.json"  # in .kb-ai/also/: the shelves as last opened


@dataclass(frozen=True)
class Opened:
    shelves: list[Shelf]
    notes: list[str]  # what the reader should know: a remote not reached


def open_shelves(okb: OpenKb) -> Opened:
    """The knowledge bases of ``okb.settings.also``, in their order."""
    shelves: list[Shelf] = []
    notes: list[str] = []
    taken: set[str] = set()
    found: list[dict[str, str]] = []
    for entry in okb.settings.also:
        entry = entry.strip()
        if not entry:
            continue
        base = slugify(Path(entry.rstrip("/")).name.removesuffix(".git"))
        name = base
        n = 2
        while name in taken:
            name, n = f"{base}-{n}", n + 1
        taken.add(name)
        if is_git_url(entry):
            root = okb.kb.state_dir / "also" / name
            try:
                mirror(entry, root, okb.settings.also_pull_seconds)
            except KbAiError as exc:
                if not (root / ".git").is_dir():
                    notes.append(f"Knowledge base {name} ({entry}) was left out: {exc}")
                    continue
                notes.append(f"Knowledge base {name} could not be pulled; its copy here is used.")
                log.warning("also %s: %s", entry, exc)
        else:
            root = Path(entry).expanduser()
            if not root.is_absolute():
                root = okb.root / root  # relative to the knowledge base, as kb-ai.toml is
        try:
            kb = KnowledgeBase.open(root)
        except NotAKnowledgeBaseError as exc:
            raise ConfigError(
                f"also: {entry} is not a kb-ai knowledge base",
                hint="name the folder (or git URL) of one, made with kb-ai init",
            ) from exc
        if kb.root == okb.root:
            raise ConfigError(f"also: {entry} is this knowledge base itself")
        shelves.append(Shelf(name, kb, okb.kb.state_dir / "also" / f"{name}.db"))
        found.append({"entry": entry, "name": name, "root": str(kb.root)})
    _record(okb.kb.state_dir / "also" / SHELVES, found)
    return Opened(shelves, notes)


def _record(path: Path, found: list[dict[str, str]]) -> None:
    """Where each shelf is, for the agent hooks (kb_ai/hooks/catalog.py), which must not
    open settings, clone or index: they read this file and the shelves' indexes."""
    text = json.dumps(found, indent=1, sort_keys=True)
    try:
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)
    except OSError as exc:  # the hooks then leave the shelves out; the answer is not harmed
        log.warning("could not record the also knowledge bases in %s: %s", path, exc)
