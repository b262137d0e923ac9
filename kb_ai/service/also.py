"""The other knowledge bases a question consults (``also`` in kb-ai.toml, ``--also``):
each opened read-only as a shelf (retrieval/shelves.py), a git URL cloned into
``.kb-ai/also/<name>/`` on first use. A copy older than ``also_pull_seconds`` is pulled
in a thread of its own (:func:`pull_in_background`), never on a question's path: the
question is answered from the copy as it is, the next one from the pulled copy.

A folder that is not a knowledge base is a ConfigError (fix the setting); a remote that
cannot be reached leaves that knowledge base out of the answer, with a note saying so,
or answers from the copy already here.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from pathlib import Path

from kb_ai.errors import ConfigError, KbAiError, NotAKnowledgeBaseError
from kb_ai.service.opened import OpenKb
from retrieval.shelves import Shelf
from wiki import KnowledgeBase, slugify
from wiki.files import atomic_write_text
from wiki.mirror import claim_pull, clone, is_git_url, pull, pull_failure

log = logging.getLogger("kb_ai.service")
SHELVES = "shelves.json"  # in .kb-ai/also/: the shelves as last opened
PULL_THREAD = "kb-ai-also-pull"


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
                cloned = clone(entry, root)  # the first use waits for it: nothing to read yet
            except KbAiError as exc:
                notes.append(f"Knowledge base {name} ({entry}) was left out: {exc}")
                continue
            if not cloned:
                if pull_failure(root) is not None:
                    notes.append(
                        f"Knowledge base {name} could not be pulled; its copy here is used."
                    )
                pull_in_background(entry, root, okb.settings.also_pull_seconds)
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


def pull_in_background(url: str, root: Path, max_age_s: float) -> threading.Thread | None:
    """Pull the copy at ``root`` in a thread of its own when its last pull began over
    ``max_age_s`` ago and no other pull of it runs (in any process); the thread, or None.
    A failure is logged and recorded in the copy: the next question says so. The thread
    is not a daemon: a command that ends meanwhile (``kb-ai ask``) waits for the pull
    after its answer is out, so the copy is never left half-pulled."""
    if not claim_pull(root, max_age_s):
        return None

    def run() -> None:
        try:
            pull(url, root)
        except KbAiError as exc:
            log.warning("also %s: %s", url, exc)

    thread = threading.Thread(target=run, name=PULL_THREAD)
    thread.start()
    return thread


def wait_for_pulls(timeout: float | None = None) -> None:
    """Wait for the pulls :func:`pull_in_background` started in this process."""
    for thread in threading.enumerate():
        if thread.name == PULL_THREAD:
            thread.join(timeout)


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
