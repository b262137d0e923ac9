"""The wiki of record in a git remote: push each commit, follow what others pushed.

A knowledge base follows a remote when its work tree's git has a remote named
``kb-ai`` (``kb-ai init --remote URL`` adds it; the ``wiki_remote`` setting sets it).
:func:`sync` brings the two together, in order: fetch; fast-forward onto what others
pushed; rebase this work tree's own commits onto it when both moved; push. Another
writer's push in between (a non-fast-forward) is fetched and rebased again, a few times.
A remote that does not answer or refuses leaves every commit here, recorded in
``.kb-ai/remote.json`` for Status and ``kb-ai status``; the next sync pushes them, in
order. What a sync brings in is put into the search index and the catalog lines by path.

Only index/ and log.md are merged by kb-ai when a rebase meets both sides' changes
(the indexes are made again from the articles, log.md keeps both sides' entries); any
other file changed on both sides stops the rebase, keeps the commits here and says so.

:func:`sync` needs the work tree to itself (no compile writing it): call it holding the
compile lock, or use :func:`publish`, which takes it if it is free.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack, closing
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kb_ai.errors import KbAiError, UsageError
from wiki.files import atomic_write_text
from wiki.git import GitTimeoutError, _run, git, network_env
from wiki.layout import KnowledgeBase
from wiki.lock import KbLock
from wiki.log import merge_logs

#: The name of the followed remote in the work tree's git configuration.
REMOTE = "kb-ai"
STATE_FILE = "remote.json"
#: Seconds a fetch or push may take before the remote counts as unreachable.
NETWORK_TIMEOUT = 60.0
#: Pushes tried when other writers keep winning the race.
PUSH_ATTEMPTS = 4
#: Files kb-ai merges itself when both sides changed them.
MERGED_BY_KB_AI = ("index/master-index.md", "index/topics.md", "log.md")


@dataclass
class RemoteState:
    """What Status says of the remote: its URL, the commits waiting here, the last
    failure (None once a sync succeeds)."""

    url: str
    branch: str = "main"
    ahead: int = 0  # commits here that the remote does not have (as of the last fetch)
    behind: int = 0
    synced_at: str | None = None  # the last sync that reached the remote
    pushed_at: str | None = None
    error: str | None = None
    hint: str | None = None
    failing_since: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Synced:
    """What one :func:`sync` did: ``changed`` paths brought in from the remote (the
    work tree's, relative), ``pushed`` commits, the state after it."""

    state: RemoteState
    changed: tuple[str, ...] = ()
    pushed: int = 0
    skipped: str = ""  # why nothing was tried (the work tree was busy)
    rebased: bool = field(default=False)


def remote_url(kb: KnowledgeBase) -> str | None:
    """The URL of the remote this knowledge base follows, None if it follows none.

    Asked on every commit and every /healthz: read from .git/config itself when that
    is a plain file with no includes (no git process), else asked of git."""
    config = kb.root / ".git" / "config"
    try:
        text = config.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = None
    plain = text is not None and "[include" not in text.lower()
    if plain and f'[remote "{REMOTE}"]' not in text:
        return None
    proc = _run(kb, ("config", "--get", f"remote.{REMOTE}.url"), check=False)
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def set_remote(kb: KnowledgeBase, url: str) -> None:
    """Follow ``url`` (added, or changed from what was followed)."""
    url = url.strip()
    current = remote_url(kb)
    if current == url:
        return
    git(kb, "remote", "set-url" if current is not None else "add", REMOTE, url)


def probe(url: str) -> list[str]:
    """The branches the remote at ``url`` holds ([] for an empty one); raises a
    KbAiError saying what git said when it cannot be reached."""
    proc = _outside(("ls-remote", "--heads", url))
    if proc.returncode != 0:
        raise UsageError(
            f"cannot reach the wiki remote {url}: {_first_line(proc)}",
            hint="give the URL or path of a git repository this machine can reach "
            "(an empty bare repository for a new knowledge base: git init --bare)",
        )
    refs = [line.split("\t", 1)[1] for line in proc.stdout.splitlines() if "\t" in line]
    return [ref.removeprefix("refs/heads/") for ref in refs]


def clone(url: str, root: Path, branch: str) -> None:
    """Clone ``branch`` of ``url`` into the new directory ``root``, following it."""
    proc = _outside(("clone", "-q", "--origin", REMOTE, "--branch", branch, url, str(root)))
    if proc.returncode != 0:
        raise KbAiError(
            f"cannot clone the wiki remote {url}: {_first_line(proc)}",
            hint=f"check that {root.parent} is writable and the remote readable",
        )


def _outside(args: tuple[str, ...]) -> Any:
    """A git command about a remote, run outside any knowledge base (before it exists)."""
    env = {**os.environ, **network_env()}
    try:
        return subprocess.run(
            ["git", *args], capture_output=True, text=True, check=False, env=env,
            timeout=NETWORK_TIMEOUT, cwd=tempfile.gettempdir(),
        )  # fmt: skip
    except FileNotFoundError as exc:
        raise KbAiError("git is not installed", hint="install git") from exc
    except subprocess.TimeoutExpired:
        return _Failed(f"no answer in {NETWORK_TIMEOUT:.0f} s")


def shares_history(kb: KnowledgeBase, url: str, branch: str) -> bool:
    """Whether ``branch`` of the remote ``url`` and this work tree's HEAD have a commit in
    common (the same knowledge base, one side ahead or both); raises when it cannot be
    fetched."""
    probe_ref = "refs/kb-ai/probe"
    fetched = _network(kb, ("fetch", "--quiet", "--no-tags", url, f"+refs/heads/{branch}:{probe_ref}"))  # fmt: skip
    if fetched.returncode != 0:
        raise UsageError(f"cannot fetch the wiki remote {url}: {_first_line(fetched)}")
    try:
        return _run(kb, ("merge-base", "HEAD", probe_ref), check=False).returncode == 0
    finally:
        _run(kb, ("update-ref", "-d", probe_ref), check=False)


def read_state(kb: KnowledgeBase) -> RemoteState | None:
    """The remote's state as the last sync left it, with the commits waiting here
    counted now (no network); None when the knowledge base follows no remote."""
    url = remote_url(kb)
    if url is None:
        return None
    state = _load(kb, url)
    state.ahead, state.behind = _counts(kb, state.branch)
    return state


def publish(kb: KnowledgeBase) -> Synced | None:
    """:func:`sync` if no one is writing the work tree (a compile, an editor's save),
    else nothing: whoever writes publishes when done, and a server retries every few
    seconds. None when the knowledge base follows no remote."""
    from wiki.hand_edits import EDIT_LOCK

    url = remote_url(kb)
    if url is None:
        return None
    with ExitStack() as held:
        for name in ("compile.lock", EDIT_LOCK):
            lock = KbLock(kb.state_dir / name)
            if not lock.acquire(blocking=False):
                return Synced(_load(kb, url), skipped=f"{name} is held: a write is under way")
            held.callback(lock.release)
        return _synced(kb, url)


def sync(kb: KnowledgeBase) -> Synced | None:
    """Fetch, take in what others pushed, push what is here (see the module's doc), and
    index the articles it brought in; never raises for the remote's faults, which are
    recorded and returned. Call it holding the compile lock. None when the knowledge
    base follows no remote."""
    url = remote_url(kb)
    return None if url is None else _synced(kb, url)


def _synced(kb: KnowledgeBase, url: str) -> Synced:
    synced = _sync(KnowledgeBase(kb.root), url)
    if synced.pushed:
        announce_push(kb)
    reindex(kb, synced.changed)
    return synced


def announce_push(kb: KnowledgeBase) -> None:
    """Tell every server sharing the database (``database_url``) that the remote moved:
    a NOTIFY its follower LISTENs for, so it fetches now instead of at its next round.
    A database that does not answer costs nothing here: the followers poll anyway."""
    from wiki.database import WIKI_CHANNEL, shared_database

    try:
        db = shared_database(kb)
        if db is not None:
            db.notify(WIKI_CHANNEL)
    except KbAiError:  # the push is done; the others find it within their poll interval
        pass


def _sync(kb: KnowledgeBase, url: str) -> Synced:
    """:func:`sync`'s git work, acting as no one: replayed commits keep their authors."""
    state = _load(kb, url)
    _settle_interrupted_rebase(kb)
    branch = _branch(kb)
    if branch is None:
        return _failed(kb, state, "the work tree is not on a branch",
                       f"check out the branch to follow: git -C {kb.root} checkout main")  # fmt: skip
    state.branch = branch
    start = _head(kb)
    pushed, rebased, took_in = 0, False, False
    for _ in range(PUSH_ATTEMPTS):
        fetched = _network(kb, ("fetch", "--quiet", "--prune", REMOTE))
        if fetched.returncode != 0:
            return _failed(kb, state, f"cannot reach the wiki remote {url}: "
                           f"{_first_line(fetched)}", _WAIT_HINT, start)  # fmt: skip
        ahead, behind = _counts(kb, branch)
        if not ahead and not behind:
            break
        if behind:
            upstream = _upstream(kb, branch)
            took_in = True
            if ahead:
                conflict = _rebase(kb, upstream)
                if conflict:
                    return _failed(kb, state, conflict, _resolve_hint(kb, branch), start)
                rebased = True
            else:
                moved = _run(kb, ("merge", "--ff-only", "-q", upstream), check=False)
                if moved.returncode != 0:
                    return _failed(kb, state, "cannot take in the remote's commits: "
                                   f"{_first_line(moved)}", _dirty_hint(kb), start)  # fmt: skip
            ahead, _ = _counts(kb, branch)
        if not ahead:
            break
        push = _network(kb, ("push", "--quiet", REMOTE, f"HEAD:refs/heads/{branch}"))
        if push.returncode == 0:
            pushed += ahead
            state.pushed_at = _now()
            break
        # Refused. If the remote moved meanwhile (another writer won the race), fetch,
        # rebase and try again; otherwise the remote refuses us: record why.
        again = _network(kb, ("fetch", "--quiet", REMOTE))
        if again.returncode != 0 or _is_ancestor(kb, _upstream(kb, branch), "HEAD"):
            return _failed(kb, state, f"the wiki remote {url} refused the push: "
                           f"{_refusal(push)}", _REFUSED_HINT, start)  # fmt: skip
    else:
        return _failed(kb, state, f"other writers kept moving the wiki remote {url}",
                       "it is tried again at the next commit and by the server", start)  # fmt: skip
    changed = _changed(kb, start, _head(kb)) if took_in else []
    state.error = state.hint = state.failing_since = None
    state.synced_at = _now()
    state.ahead = state.behind = 0  # as of this fetch: pushed, taken in, or both
    _save(kb, state)
    return Synced(state, tuple(changed), pushed, rebased=rebased)


def reindex(kb: KnowledgeBase, changed: Sequence[str]) -> None:
    """Bring the search index and the catalog lines up to date for ``changed`` paths
    (the articles among them; the rest is not indexed)."""
    from wiki.indexing import refresh_search_index, remove_from_tables
    from wiki.state import open_state

    articles = [p for p in changed if p.startswith("wiki/") and p.endswith(".md")]
    if not articles:
        return
    present = [p for p in articles if (kb.root / p).is_file()]
    with closing(open_state(kb)) as conn:
        remove_from_tables(conn, [p for p in articles if p not in present])
        refresh_search_index(kb, conn, present)


# -- git, a step at a time -------------------------------------------------------------

_WAIT_HINT = "commits stay here and are pushed, in order, once it answers"
_REFUSED_HINT = (
    "commits stay here; check that this machine may push there (a hook, permissions, a "
    "protected branch); they are pushed at the next commit and by the server"
)


def _network(kb: KnowledgeBase, args: tuple[str, ...]) -> Any:
    """A git command that talks to the remote: never prompting, bounded in time; a
    timeout comes back as a failed process, like any other failure to reach it."""
    try:
        return _run(kb, args, check=False, env=network_env(), timeout=NETWORK_TIMEOUT)
    except GitTimeoutError as exc:
        return _Failed(exc.message)


@dataclass(frozen=True)
class _Failed:
    stderr: str
    stdout: str = ""
    returncode: int = 1


def _first_line(proc: Any) -> str:
    lines = [ln.strip() for ln in (proc.stderr or proc.stdout or "").splitlines() if ln.strip()]
    # git's "fatal:"/"error:" lines say why; hook output comes as "remote: ..." lines
    said = [ln for ln in lines if ln.startswith(("fatal:", "error:"))] or lines
    return said[0].removeprefix("fatal: ").removeprefix("error: ") if said else "no reason given"


def _refusal(proc: Any) -> str:
    """Why a push was refused: git's reason for the ref ("pre-receive hook declined")
    and what the remote's hook said ("remote: ..." lines)."""
    lines = [ln.strip() for ln in (proc.stderr or "").splitlines()]
    said = [ln.removeprefix("remote:").strip() for ln in lines if ln.startswith("remote:")]
    reasons = [ln.rsplit("(", 1)[-1].rstrip(")") for ln in lines if ln.startswith("! [")]
    parts = [*reasons[:1], *filter(None, said[:3])]
    return ": ".join(parts) if parts else _first_line(proc)


def _branch(kb: KnowledgeBase) -> str | None:
    proc = _run(kb, ("symbolic-ref", "--short", "-q", "HEAD"), check=False)
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def _head(kb: KnowledgeBase) -> str | None:
    proc = _run(kb, ("rev-parse", "--verify", "-q", "HEAD^{commit}"), check=False)
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def _upstream(kb: KnowledgeBase, branch: str) -> str | None:
    ref = f"refs/remotes/{REMOTE}/{branch}"
    proc = _run(kb, ("rev-parse", "--verify", "-q", ref), check=False)
    return ref if proc.returncode == 0 else None


def _counts(kb: KnowledgeBase, branch: str) -> tuple[int, int]:
    """(commits here the remote lacks, commits there this work tree lacks), as of the
    last fetch; an empty remote lacks every commit here."""
    upstream = f"refs/remotes/{REMOTE}/{branch}"
    both = _run(kb, ("rev-list", "--left-right", "--count", f"HEAD...{upstream}"), check=False)
    if both.returncode == 0:  # one git process in the usual case
        ahead, behind = both.stdout.split()
        return int(ahead), int(behind)
    if _head(kb) is None:
        return 0, 0
    return int(git(kb, "rev-list", "--count", "HEAD").strip() or 0), 0  # nothing fetched


def _is_ancestor(kb: KnowledgeBase, older: str | None, newer: str) -> bool:
    if older is None:
        return True
    return _run(kb, ("merge-base", "--is-ancestor", older, newer), check=False).returncode == 0


def _changed(kb: KnowledgeBase, old: str | None, new: str | None) -> list[str]:
    if old is None or new is None or old == new:
        return []
    out = git(kb, "diff", "--name-only", "--no-renames", "-z", old, new)
    return [p for p in out.split("\0") if p]


def _rebase(kb: KnowledgeBase, upstream: str | None) -> str | None:
    """Replay this work tree's commits onto ``upstream``, merging index/ and log.md
    where both changed them. None when done; else why it stopped (aborted: the
    commits are as they were)."""
    env = {"GIT_EDITOR": "true"}
    proc = _run(kb, ("rebase", "-q", str(upstream)), check=False, env=env)
    while proc.returncode != 0:
        conflicted = [p for p in git(kb, "diff", "--name-only", "-z", "--diff-filter=U").split("\0") if p]  # fmt: skip
        others = [p for p in conflicted if p not in MERGED_BY_KB_AI]
        if not conflicted or others:
            _run(kb, ("rebase", "--abort"), check=False)
            if not conflicted:
                return f"cannot rebase this server's commits onto the remote's: {_first_line(proc)}"
            return ("this server's commits and the remote's both changed "
                    f"{', '.join(others[:5])}: not pushed")  # fmt: skip
        if "log.md" in conflicted:
            _merge_log(kb)
        if any(p.startswith("index/") for p in conflicted):
            _remake_indexes(kb)
        git(kb, "add", "--", *conflicted)
        proc = _run(kb, ("rebase", "--continue"), check=False, env=env)
    return None


def _settle_interrupted_rebase(kb: KnowledgeBase) -> None:
    """A rebase of ours that a killed process left half-done: undone (its commits are
    as they were before it), so this round rebases again from the start."""
    git_dir = kb.root / ".git"
    if (git_dir / "rebase-merge").is_dir() or (git_dir / "rebase-apply").is_dir():
        _run(kb, ("rebase", "--abort"), check=False)


def _merge_log(kb: KnowledgeBase) -> None:
    """log.md is append-only: the remote's version, then what this commit appended
    (wiki/log.py merge_logs: every line of each side once, by position)."""

    def stage(n: int) -> str:
        proc = _run(kb, ("show", f":{n}:log.md"), check=False)
        return proc.stdout if proc.returncode == 0 else ""

    base, theirs, mine = stage(1), stage(2), stage(3)  # in a rebase, 2 is the upstream
    atomic_write_text(kb.log_path, merge_logs(base, theirs, mine))


def _remake_indexes(kb: KnowledgeBase) -> None:
    from wiki.catalog import build_catalog, write_indexes

    write_indexes(kb, build_catalog(kb))


def _resolve_hint(kb: KnowledgeBase, branch: str) -> str:
    return (
        f"the commits stay here; merge by hand in {kb.root} (git pull --rebase {REMOTE} "
        f"{branch}, resolve, git push {REMOTE} HEAD:{branch}), or drop them and keep "
        f"the remote's version (git reset --hard {REMOTE}/{branch})"
    )


def _dirty_hint(kb: KnowledgeBase) -> str:
    return f"commit or remove the changes made by hand in {kb.root} (git -C {kb.root} status)"


# -- the state file --------------------------------------------------------------------


def _load(kb: KnowledgeBase, url: str) -> RemoteState:
    path = kb.state_dir / STATE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        known = {k: v for k, v in data.items() if k in RemoteState.__dataclass_fields__}
        state = RemoteState(**known)
    except (OSError, ValueError, TypeError):
        return RemoteState(url=url)
    if state.url != url:  # another remote now: its past is not this one's
        return RemoteState(url=url)
    return state


def _save(kb: KnowledgeBase, state: RemoteState) -> None:
    kb.state_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(kb.state_dir / STATE_FILE, json.dumps(state.as_dict(), indent=1) + "\n")


def _failed(
    kb: KnowledgeBase, state: RemoteState, error: str, hint: str, start: str | None = None
) -> Synced:
    state.error, state.hint = error, hint
    state.failing_since = state.failing_since or _now()
    state.ahead, state.behind = _counts(kb, state.branch)
    _save(kb, state)
    return Synced(state, tuple(_changed(kb, start, _head(kb))))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
