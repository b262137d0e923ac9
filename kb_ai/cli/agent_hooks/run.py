"""The hook commands an agent runs: they read its hook event (JSON on standard input) and
answer in the form it expects. Claude Code and Codex share the event shape
(session_id, transcript_path, cwd, hook_event_name, ...) and both add a hook's standard
output to the model's context.

Every hook fails open: on any error, a missing KB or a missing server it prints nothing
and exits 0, within a second, so it never gets in the agent's way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import traceback
from collections.abc import Mapping
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kb_ai.cli.agent_hooks.locate import find_kb
from kb_ai.cli.agent_hooks.snapshot import session_snapshot
from wiki import KnowledgeBase, open_state

DEADLINE_SECONDS = 0.9
MAX_TRANSCRIPT_BYTES = 50_000_000


def parse_event(stdin_text: str) -> dict[str, Any]:
    try:
        event = json.loads(stdin_text) if stdin_text.strip() else {}
    except json.JSONDecodeError:
        return {}
    return event if isinstance(event, dict) else {}


def session_start(kb: KnowledgeBase, event: Mapping[str, Any]) -> str:
    return session_snapshot(kb, str(event.get("session_id") or "no-session"))


def session_end(kb: KnowledgeBase, event: Mapping[str, Any], agent: str) -> str:
    """Queue the session's transcript; a running server (or a worker started here)
    compiles it. Returns nothing to show the agent."""
    from compiler.queue import TaskQueue

    path = event.get("transcript_path")
    session = str(event.get("session_id") or "")
    if not isinstance(path, str) or not path:
        return ""
    transcript = Path(path).expanduser()
    if not transcript.is_file() or transcript.stat().st_size > MAX_TRANSCRIPT_BYTES:
        return ""
    content = transcript.read_bytes()
    if not content.strip():
        return ""
    with closing(open_state(kb)) as conn:
        TaskQueue(kb, conn).submit(
            f"{agent} session {session[:8] or transcript.stem}",
            content,
            filename=transcript.name,
            kind="transcript",
            origin=f"transcript:{agent}:{session or transcript.stem}",
        )
    start_drain_worker(kb)
    return ""


def prompt_hint(kb: KnowledgeBase, event: Mapping[str, Any]) -> str:
    """One line with the number of wiki pages that look relevant, and no wiki text."""
    from wiki.search import SearchIndex

    prompt = event.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return ""
    with closing(open_state(kb)) as conn:
        hits = SearchIndex(conn).search(prompt[:2000], limit=20)
    if not hits:
        return ""
    n = len(hits)
    return f"kb-ai: {n} wiki page{'s' if n != 1 else ''} may be relevant; the `ask` MCP tool answers from them with citations."


def worker_alive(kb: KnowledgeBase) -> bool:
    """Whether a worker (a `kb-ai serve`, or a drain started earlier) holds the KB's worker lock."""
    from wiki.lock import KbLock

    lock = KbLock(kb.state_dir / "worker.lock")
    if lock.acquire(blocking=False):
        lock.release()
        return False
    return True


def start_drain_worker(kb: KnowledgeBase) -> None:
    """Start `kb-ai worker --drain` in the background, detached, unless one is running."""
    if worker_alive(kb):
        return
    log = open(kb.state_dir / "worker.log", "ab")  # noqa: SIM115 - handed to the child
    with log:
        subprocess.Popen(
            [sys.executable, "-P", "-m", "kb_ai", "--kb", str(kb.root), "worker", "--drain"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
        )


HANDLERS = {"session-start", "session-end", "prompt"}


def run_hook(
    name: str,
    stdin_text: str,
    *,
    agent: str,
    kb_dir: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> str:
    """Run one hook; returns what to print. Never raises: a hook must not break the agent."""
    kb: KnowledgeBase | None = None
    try:
        event = parse_event(stdin_text)
        cwd = event.get("cwd") if isinstance(event.get("cwd"), str) else os.getcwd()
        root = Path(kb_dir) if kb_dir else find_kb(cwd, environ)
        if root is None:
            return ""
        kb = KnowledgeBase.open(root)
        if name == "session-start":
            return session_start(kb, event)
        if name == "session-end":
            return session_end(kb, event, agent)
        if name == "prompt":
            return prompt_hint(kb, event)
        return ""
    except BaseException:  # noqa: BLE001 - fail open is the contract of every hook
        _log_failure(kb, name)
        return ""


def _log_failure(kb: KnowledgeBase | None, name: str) -> None:
    if kb is None:
        return
    try:
        with open(kb.state_dir / "hooks.log", "a", encoding="utf-8") as f:
            f.write(
                f"{datetime.now(UTC).isoformat()} hook {name} failed:\n{traceback.format_exc()}\n"
            )
    except OSError:
        pass


def exit_after_deadline(seconds: float = DEADLINE_SECONDS) -> threading.Timer:
    """Guarantee the hook process ends in time, whatever it is stuck on."""
    timer = threading.Timer(seconds, lambda: os._exit(0))
    timer.daemon = True
    timer.start()
    return timer
