"""The hook commands an agent runs (``kb-ai-hook NAME --agent A``, or ``python -m
kb_ai.hooks NAME ...``, whose entry point is kb_ai/hooks/__main__.py): they read the agent's hook event (JSON on standard input) and
answer in the form it expects. Claude Code and Codex share the event shape (session_id,
transcript_path, cwd, hook_event_name, ...) and both add a hook's standard output to the
model's context.

- ``session-end`` (SessionEnd, Stop, PreCompact) appends one record to the KB's spool
  (kb_ai/hooks/spool.py) and, when no worker is running, starts one; it reads no
  transcript and imports nothing heavy, so it ends in tens of milliseconds even on a
  busy machine.
- ``session-start`` prints the snapshot (kb_ai/hooks/snapshot.py).
- ``prompt`` prints a one-line hint naming up to three pages that look relevant
  (kb_ai/hooks/hint.py, handed in by the entry point).

Every hook fails open: on any error, or a missing KB, it prints nothing and exits 0.
Nothing here kills the process on a timer: the agent's own hook timeout is the bound.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from kb_ai.hooks import spool
from kb_ai.hooks.locate import find_kb, is_kb
from kb_ai.hooks.snapshot import STATE_DIR, session_snapshot

HANDLERS = ("session-start", "session-end", "prompt")
# the prompt hook searches the wiki's index (kb_ai/hooks/hint.py), handed in by the entry point
PromptHint = Callable[[Path, Mapping[str, object]], str]
AGENTS = ("claude-code", "codex")
MAX_STDIN_BYTES = spool.MAX_EVENT_BYTES
# the capture and prompt hooks in POSIX sh (the prompt's with its awk program, hint.awk),
# which `hooks install` prefers where /bin/sh exists
SHELL_HOOK = Path(__file__).with_name("kb-ai-hook.sh")
POSIX_SH = "/bin/sh"
USAGE = (
    "usage: kb-ai-hook {session-start,session-end,prompt} [--agent claude-code|codex] [--kb DIR]"
)


def shell_hook_usable() -> bool:
    """Whether the capture and prompt hooks can be the shell script (not on Windows)."""
    return (
        os.name == "posix"
        and os.access(POSIX_SH, os.X_OK)
        and SHELL_HOOK.is_file()
        and SHELL_HOOK.with_name("hint.awk").is_file()
    )


def parse_event(stdin_text: str) -> dict[str, object]:
    try:
        event = json.loads(stdin_text) if stdin_text.strip() else {}
    except json.JSONDecodeError:
        return {}
    return event if isinstance(event, dict) else {}


def session_end(root: Path, event: Mapping[str, object], agent: str, cwd: str) -> str:
    """Spool the session for the worker, and make sure a worker will take it."""
    if not isinstance(event.get("transcript_path"), str) or not event.get("transcript_path"):
        return ""
    state = root / STATE_DIR
    record = spool.make_record(dict(event), agent, cwd)
    if spool.unchanged_since_spooled(state, record):
        return ""  # a second event with nothing new (PreCompact, then SessionEnd): no work
    spool.append(state, record)
    spool.remember_spooled(state, record)
    start_worker(root)
    return ""


def worker_alive(root: Path) -> bool:
    """Whether a worker (a `kb-ai serve`, or a drain started earlier) holds the KB's
    worker lock (shared, see compiler/worker.py); a free lock means none."""
    path = root / STATE_DIR / "worker.lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops a lock taken here
    return False


def worker_command(root: Path) -> list[str]:
    return [sys.executable, "-P", "-m", "kb_ai", "--kb", str(root), "worker", "--drain"]


WORKER_PID = "worker.pid"


def process_start(pid: int) -> str | None:
    """When a process started (field 22 of /proc/PID/stat, clock ticks since boot), or
    None where there is no /proc or no such process: with its pid, it names one process
    even after the pid is reused."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rpartition(b") ")[2].split()
    except OSError:
        return None
    return fields[19].decode("ascii") if len(fields) > 19 else None


def announce_worker(state_dir: Path) -> str | None:
    """Name this process in ``worker.pid`` ("PID START"), so the shell hook can tell a
    worker runs with its own builtins (no program started); it still falls back to the
    worker lock when the file names no live process. Returns what was written."""
    start = process_start(os.getpid())
    if start is None:
        return None  # no /proc: the shell hook asks the lock
    line = f"{os.getpid()} {start}\n"
    tmp = state_dir / f".{WORKER_PID}.{os.getpid()}"
    try:
        tmp.write_text(line, encoding="ascii")
        os.replace(tmp, state_dir / WORKER_PID)
    except OSError:
        return None
    return line


def withdraw_worker(state_dir: Path, line: str | None) -> None:
    """Remove ``worker.pid`` if it still names this process (another worker may have
    named itself since: it then stays)."""
    path = state_dir / WORKER_PID
    try:
        if line is not None and path.read_text(encoding="ascii") == line:
            path.unlink()
    except (OSError, UnicodeDecodeError):
        pass


STARTING = "worker.starting"
STARTING_SECONDS = 30.0  # a worker takes its lock within this of being started


def _claim_start(root: Path) -> bool:
    """Whether this hook is the one to start a worker: a worker takes a second or two
    to import and take its lock, and the hooks ending meanwhile must not each start
    another. The first creates ``worker.starting`` (the worker removes it); a stale one
    (its worker died starting) is replaced."""
    import time

    path = root / STATE_DIR / STARTING
    for _ in range(2):
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            return True
        except FileExistsError:
            try:
                if time.time() - os.stat(path).st_mtime < STARTING_SECONDS:
                    return False
                os.unlink(path)
            except FileNotFoundError:
                pass
    return False


def start_worker(root: Path) -> None:
    """Start `kb-ai worker --drain` detached (its own session, output to worker.log),
    unless one is running or starting. A worker looks at the spool again after
    releasing its lock, so a record spooled while it was finishing is not left behind."""
    if worker_alive(root) or not _claim_start(root):
        return
    log = str(root / STATE_DIR / "worker.log")
    try:  # posix_spawn: no fork of this process, and no subprocess module to import
        os.posix_spawn(
            sys.executable,
            worker_command(root),
            os.environ,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_OPEN, 1, log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644),
                (os.POSIX_SPAWN_DUP2, 1, 2),
            ],
            setsid=True,
        )
    except (NotImplementedError, AttributeError):  # a platform without setsid in posix_spawn
        import subprocess

        with open(log, "ab") as out:
            subprocess.Popen(
                worker_command(root),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,
            )


def run_hook(
    name: str,
    stdin_text: str,
    *,
    agent: str,
    kb_dir: str | None = None,
    environ: Mapping[str, str] | None = None,
    prompt: PromptHint | None = None,
) -> str:
    """Run one hook; returns what to print. Never raises: a hook must not break the agent."""
    root: Path | None = None
    try:
        event = parse_event(stdin_text)
        cwd = event.get("cwd") if isinstance(event.get("cwd"), str) else os.getcwd()
        if kb_dir:
            root = Path(kb_dir).expanduser().resolve()
            if not is_kb(root):
                return ""
        else:
            root = find_kb(cwd, environ)
        if root is None:
            return ""
        if name == "session-start":
            return session_snapshot(root, str(event.get("session_id") or "no-session"))
        if name == "session-end":
            return session_end(root, event, agent, cwd)
        if name == "prompt" and prompt is not None:
            return prompt(root, event)
        return ""
    except BaseException:  # noqa: BLE001 - fail open is the contract of every hook
        _log_failure(root, name)
        return ""


def _log_failure(root: Path | None, name: str) -> None:
    if root is None:
        return
    import time
    import traceback

    try:
        with open(root / STATE_DIR / "hooks.log", "a", encoding="utf-8") as f:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            f.write(f"{stamp} hook {name} failed:\n{traceback.format_exc()}\n")
    except OSError:
        pass


def parse_args(argv: list[str]) -> tuple[str, str, str | None] | None:
    """(name, agent, kb) from ``NAME [--agent A] [--kb DIR]`` (argparse costs more than this)."""
    name, agent, kb = None, "claude-code", None
    it = iter(argv)
    for arg in it:
        if arg in ("--agent", "--kb"):
            value = next(it, None)
            if value is None:
                return None
            if arg == "--agent":
                agent = value
            else:
                kb = value
        elif arg.startswith("--agent="):
            agent = arg.split("=", 1)[1]
        elif arg.startswith("--kb="):
            kb = arg.split("=", 1)[1]
        elif name is None:
            name = arg
        else:
            return None
    if name not in HANDLERS or agent not in AGENTS:
        return None
    return name, agent, kb
