"""The wiki remote through the application layer (wiki/remote.py does the git work):
making a knowledge base from a remote, publishing after each write, and the follower a
server runs to take in what other servers push.

Every verb that commits (compile, removal, approval, an edit, lint --fix) publishes
when it is done; a compile also takes in the remote's commits before it writes
(compiler/run.py). What could not be pushed waits here and goes with the next publish,
or the follower's next round.
"""

from __future__ import annotations

import logging
import threading
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from kb_ai.errors import KbAiError, UsageError
from kb_ai.service.opened import OpenKb
from wiki import KnowledgeBase
from wiki import remote as wiki_remote
from wiki.database import WIKI_CHANNEL, Listener, shared_database
from wiki.layout import CONFIG_NAME
from wiki.remote import RemoteState, Synced

log = logging.getLogger("kb_ai.service.remote")

__all__ = ["Follower", "Initialised", "init_from_remote", "publish", "remote_state"]


@dataclass(frozen=True)
class Initialised:
    """What ``kb-ai init --remote`` did: ``how`` is "cloned" (the remote held a
    knowledge base), "pushed" (it was empty and now holds this one) or "following" (this
    knowledge base is the remote's already: it follows it)."""

    kb: KnowledgeBase
    how: str
    url: str
    synced: Synced | None = None


def init_from_remote(root: Path, url: str) -> Initialised:
    """A knowledge base at ``root`` that follows the remote ``url``: cloned from it when
    it holds one, else made (or taken as it is) and pushed to it."""
    url = url.strip()
    if not url:
        raise UsageError("--remote needs a URL or path", hint="e.g. --remote /srv/kb.git")
    root = root.expanduser().resolve()
    branches = wiki_remote.probe(url)
    if branches and (root / CONFIG_NAME).is_file():
        return _join(KnowledgeBase.open(root), url, branches)
    if branches:
        return _clone(root, url, branches)
    return _follow(KnowledgeBase.init(root), url, "pushed")


def _follow(kb: KnowledgeBase, url: str, how: str) -> Initialised:
    """``kb`` following ``url``, synced with it now (a failure to push is an error here:
    the person running init is there to see it)."""
    wiki_remote.set_remote(kb, url)
    synced = wiki_remote.publish(kb)
    if synced is not None and synced.state.error:
        raise KbAiError(synced.state.error, hint=synced.state.hint)
    return Initialised(kb, how, url, synced)


def _join(kb: KnowledgeBase, url: str, branches: list[str]) -> Initialised:
    """A knowledge base here and one on the remote: followed when they are the same one
    (it follows that remote already, or their histories meet), else refused."""
    branch = "main" if "main" in branches else branches[0]
    if wiki_remote.remote_url(kb) != url and not wiki_remote.shares_history(kb, url, branch):
        raise UsageError(
            f"{kb.root} is a knowledge base, and the remote {url} holds another one",
            hint="give a new or empty directory to clone it into (kb-ai --kb DIR init "
            "--remote URL), or an empty remote to push this one to",
        )
    return _follow(kb, url, "following")


def _clone(root: Path, url: str, branches: list[str]) -> Initialised:
    from wiki.indexing import refresh_search_index
    from wiki.state import STATE_LOST, open_state, set_meta

    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise UsageError(
            f"{root} is not empty, and the remote {url} holds a knowledge base already",
            hint="give a new or empty directory to clone it into (kb-ai --kb DIR init "
            "--remote URL), or point wiki_remote at an empty remote to push this one",
        )
    branch = "main" if "main" in branches else branches[0]
    wiki_remote.clone(url, root, branch)
    if not (root / CONFIG_NAME).is_file():
        _remove_clone(root)
        raise UsageError(
            f"the remote {url} holds a git repository that is not a kb-ai knowledge base "
            f"(no {CONFIG_NAME} on its branch {branch})",
            hint="give the remote of a knowledge base, or an empty one for a new knowledge base",
        )
    kb = KnowledgeBase.init(root)  # the state folder: what a clone does not carry
    with closing(open_state(kb)) as conn:
        # A state.db made for a clone knows its sources again from raw/ (wiki/rebuild.py),
        # and nothing was lost: it never had one.
        set_meta(conn, STATE_LOST, None)
        refresh_search_index(kb, conn)
    return Initialised(kb, "cloned", url)


def _remove_clone(root: Path) -> None:
    import shutil

    shutil.rmtree(root, ignore_errors=True)


def publish(okb: OpenKb) -> Synced | None:
    """Push what this knowledge base committed (and take in what others pushed), if no
    write is under way here; None when it follows no remote. Blocking (git)."""
    synced = wiki_remote.publish(okb.kb)
    if synced is not None and synced.state.error:
        log.warning("wiki remote: %s (%s)", synced.state.error, synced.state.hint)
    return synced


def remote_state(okb: OpenKb) -> RemoteState | None:
    """The remote as Status shows it (no network); None when it follows none."""
    return wiki_remote.read_state(okb.kb)


class Follower:
    """A thread that publishes every ``every`` seconds: takes in what other servers
    pushed (a fast-forward, the search index updated by path) and pushes what waits
    here. :meth:`wake` runs a round now: with a shared database (``database_url``) a
    writer's NOTIFY after each push calls it (wiki.remote.announce_push), so every
    server follows at once and the rounds are only the fallback."""

    def __init__(self, okb: OpenKb, every: float) -> None:
        self.okb = okb
        self.every = every
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.rounds = 0
        self.last: Synced | None = None
        self._listener: Listener | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="kb-ai-follower", daemon=True)
        self._thread.start()
        try:
            db = shared_database(self.okb.kb)
        except KbAiError as exc:  # it polls meanwhile; the server says what is wrong
            log.warning("following the wiki remote without notifications: %s", exc)
            db = None
        if db is not None:
            self._listener = db.listen(self.wake, WIKI_CHANNEL)

    def wake(self) -> None:
        """Sync as soon as the thread is free (the remote moved, or a commit was made)."""
        self._wake.set()

    def stop(self, timeout: float = 70.0) -> None:
        if self._listener is not None:
            self._listener.stop()
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.last = publish(self.okb)
            except KbAiError as exc:  # the state database or the work tree: said, retried
                log.warning("following the wiki remote: %s", exc)
            self.rounds += 1
            self._wake.wait(self.every)
            self._wake.clear()
