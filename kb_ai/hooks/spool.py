"""The capture spool: where an agent hook leaves a session for the worker, durably.

A record is one small JSON file (session id, transcript path, agent, cwd, event, time).
The hook writes it to ``spool/tmp/``, fsyncs it once and renames it into ``spool/new/``
(a rename is atomic, so a reader never sees half a record). A worker claims a record by
renaming it into ``spool/cur/`` under a name carrying its process id: only one rename
can win, and a record whose claimer died is handed back to ``new/``. The record is
deleted only after the capture table in state.db says it was taken (same transaction
as the queue insert), so a crash at any point loses nothing and a record counts once.

The shell hook (kb_ai/hooks/kb-ai-hook.sh) parses no JSON and runs no program to learn
the time: its record is the agent's event followed by one line of its own (``{"v": 3,
"agent", "hook_cwd"}``), named ``sh-PID-HEX8.json``; :func:`pending` renames it as
:func:`append` names a record, from the file's modification time (when the hook wrote
it), and :func:`read` takes the record's fields from the event. A shell record holding
no hook event (the agent sent nothing usable) is deleted: the Python hook would have
spooled nothing. (Records of the hook before v3 began ``{"v":2,...,"raw":``; they are
still read.)

This module is imported by the hook itself: standard library only, nothing slow.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

SPOOL_DIR = "spool"
NEW, CUR, TMP, BAD, SEEN = "new", "cur", "tmp", "bad", "seen"
MAX_EVENT_BYTES = 1_000_000  # what a hook reads of its standard input
MAX_RECORD_BYTES = MAX_EVENT_BYTES + 64 * 1024  # a shell record holds the whole event
SHELL_PREFIX = b'{"v":2,'  # how the shell hook's records began before v3
# events after which a session goes on: its capture waits until the session is quiet
CLAIM_SECONDS = 600  # a claimed record is taken into the queue in well under a second
ONGOING_EVENTS = frozenset({"Stop", "PreCompact", "SubagentStop"})


def spool_dir(state_dir: Path) -> Path:
    return state_dir / SPOOL_DIR


def _field(event: dict[str, object], key: str, limit: int = 4096) -> str:
    value = event.get(key)
    return value[:limit] if isinstance(value, str) else ""


def make_record(event: dict[str, object], agent: str, cwd: str) -> dict[str, object]:
    """The record of a hook event (only the fields the worker needs, each bounded)."""
    return {
        "v": 1,
        "session_id": _field(event, "session_id", 200),
        "transcript_path": _field(event, "transcript_path"),
        "agent": agent,
        "cwd": cwd[:4096],
        "event": _field(event, "hook_event_name", 100),
        "time": time.time(),
    }


def append(state_dir: Path, record: dict[str, object]) -> Path:
    """Write one record durably (one fsync); returns its path in ``new/``."""
    base = spool_dir(state_dir)
    name = f"{time.time_ns():020d}-{os.getpid()}-{os.urandom(4).hex()}.json"
    tmp, new = base / TMP / name, base / NEW / name
    data = json.dumps(record, ensure_ascii=False).encode("utf-8")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileNotFoundError:
        for sub in (TMP, NEW, CUR):
            os.makedirs(base / sub, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, new)
    return new


def _seen_path(state_dir: Path, record: dict[str, object]) -> Path:
    name = f"{record.get('agent')}-{record.get('session_id')}"
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:200]
    return spool_dir(state_dir) / SEEN / safe


def _stamp(record: dict[str, object]) -> str | None:
    """The transcript's size and modification time (it only grows), or None."""
    try:
        st = os.stat(str(record.get("transcript_path") or ""))
    except OSError:
        return None
    return f"{st.st_size} {st.st_mtime_ns}"


def unchanged_since_spooled(state_dir: Path, record: dict[str, object]) -> bool:
    """Whether this session's transcript is as it was when it was last spooled."""
    stamp = _stamp(record)
    if stamp is None or not record.get("session_id"):
        return False
    try:
        return _seen_path(state_dir, record).read_text(encoding="utf-8") == stamp
    except (OSError, UnicodeDecodeError):
        return False


def remember_spooled(state_dir: Path, record: dict[str, object]) -> None:
    """Note the transcript's stamp (no fsync: were it lost, the next event spools again)."""
    stamp = _stamp(record)
    if stamp is None or not record.get("session_id"):
        return
    path = _seen_path(state_dir, record)
    path.parent.mkdir(exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(stamp, encoding="utf-8")
    os.replace(tmp, path)


def record_id(path: Path) -> str:
    """A record's id: its file name in ``new/`` (without a claimer's suffix)."""
    return path.name.split(".json", 1)[0]


SHELL_NAME = "sh-"  # how the shell hook names a record: sh-PID-HEX8.json, no time in it


def _named(path: Path) -> Path | None:
    """A shell hook's record renamed as :func:`append` names one, its time being the
    file's modification time (when the hook wrote it; a rename keeps it). None when
    another reader renamed or claimed it first."""
    pid, _, rest = path.name[len(SHELL_NAME) :].partition("-")
    if not pid.isdigit() or not rest.endswith(".json"):
        return path  # not the hook's: read() moves it to bad/
    try:
        target = path.with_name(f"{path.stat().st_mtime_ns:020d}-{pid}-{rest}")
        os.rename(path, target)
    except OSError:  # gone (another reader's now), or not ours to rename: next time
        return None
    return target


def pending(state_dir: Path) -> list[Path]:
    """Records waiting in ``new/``, oldest first (the shell hook's records named first)."""
    try:
        found = list((spool_dir(state_dir) / NEW).glob("*.json"))
    except OSError:
        return []
    named = [p if not p.name.startswith(SHELL_NAME) else _named(p) for p in found]
    return sorted(p for p in named if p is not None)


def record_time(path: Path) -> float:
    """When a record was written: from its name, or for a shell hook's record not yet
    renamed (see :func:`pending`), from its modification time."""
    try:
        return int(path.name.split("-", 1)[0]) / 1e9
    except ValueError:
        pass
    try:
        return path.stat().st_mtime if path.name.startswith(SHELL_NAME) else 0.0
    except OSError:
        return 0.0


def claim(state_dir: Path, path: Path) -> Path | None:
    """Take a record from ``new/`` for this process; None when another process took it."""
    target = spool_dir(state_dir) / CUR / f"{path.name}.{os.getpid()}"
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.rename(path, target)
    except FileNotFoundError:
        return None
    os.utime(target)  # the claim's time: a claim left this long is taken back
    return target


def _shell_record(header: bytes, raw: bytes, when: object) -> dict[str, object] | None:
    """The record of the shell hook's line (its JSON object) and the agent's bytes, as
    :func:`make_record` makes it; None when those bytes are not a session's event, read
    exactly as the Python hook reads its standard input (UTF-8, bad bytes replaced; a
    JSON object with a transcript path)."""
    try:  # the hook's line holds its directory's name: bytes, maybe not UTF-8
        fields = json.loads(header.decode("utf-8", errors="replace"))
        text = raw.decode("utf-8", errors="replace")
        event = json.loads(text) if text.strip() else {}
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(fields, dict) or not isinstance(event, dict):
        return None
    agent, path = fields.get("agent"), event.get("transcript_path")
    if agent not in ("claude-code", "codex") or not isinstance(path, str) or not path:
        return None
    cwd = event.get("cwd") if isinstance(event.get("cwd"), str) else fields.get("hook_cwd")
    record = make_record(event, agent, cwd if isinstance(cwd, str) else "")
    record["time"] = float(when) if isinstance(when, int | float) else 0.0
    return record


def from_shell(data: bytes) -> dict[str, object] | None:
    """The record of a file the shell hook wrote before v3 (the header ``{"v":2,...``,
    ``"raw":``, the agent's bytes, ``}``); None when it is not a session's event."""
    head, sep, rest = data.partition(b',"raw":')
    if not sep or not rest.endswith(b"}\n"):
        return None
    try:
        when = json.loads((head + b"}").decode("utf-8", errors="replace")).get("time")
    except (json.JSONDecodeError, AttributeError):
        return None
    return _shell_record(head + b"}", rest[:-2], when)


SHELL_LINE = b'{"v":3,'  # how the line the shell hook writes after the agent's event begins


def shell_line(data: bytes) -> tuple[bytes, bytes] | None:
    """A v3 shell record's parts: the agent's bytes and the hook's line (``{"v":3,
    "agent":...,"hook_cwd":...}``, the file's last line); None when it is not one. A
    Python record is one line of ``json.dumps``, which ends with no newline."""
    if not data.endswith(b"}\n"):
        return None
    raw, sep, line = data[:-1].rpartition(b"\n")
    return (raw, line) if sep and line.startswith(SHELL_LINE) else None


def read(path: Path) -> dict[str, object] | None:
    """The record in a file, or None when it is not one (it is moved to ``bad/``; a
    shell record holding no session's event is deleted)."""
    try:
        data = path.read_bytes()[:MAX_RECORD_BYTES]
    except OSError:
        data = b""
    parts = shell_line(data)
    if parts is not None or data.startswith(SHELL_PREFIX):
        # a v3 record holds no time: it was written when its name says (see pending)
        record = (
            _shell_record(parts[1], parts[0], record_time(path))
            if parts is not None
            else from_shell(data)
        )
        if record is None:
            path.unlink(missing_ok=True)  # the Python hook would have spooled nothing
        return record
    try:
        record = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError):
        record = None
    if isinstance(record, dict) and isinstance(record.get("session_id"), str):
        return record
    bad = path.parent.parent / BAD
    bad.mkdir(exist_ok=True)
    with contextlib.suppress(OSError):
        os.rename(path, bad / path.name)
    return None


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reclaim(state_dir: Path) -> int:
    """Hand back to ``new/`` the records claimed by processes that are gone."""
    base = spool_dir(state_dir)
    n = 0
    try:
        claimed = list((base / CUR).iterdir())
    except OSError:
        return 0
    for path in claimed:
        stem, _, owner = path.name.rpartition(".")
        if not owner.isdigit() or int(owner) == os.getpid():
            continue
        try:
            stale = time.time() - path.stat().st_mtime > CLAIM_SECONDS
        except OSError:
            continue
        if process_alive(int(owner)) and not stale:
            continue
        try:
            os.rename(path, base / NEW / stem)
            n += 1
        except OSError:
            continue
    return n


TMP_SECONDS = 3600  # a hook finishes its record in seconds: one older was cut off


def sweep_tmp(state_dir: Path, *, now: float | None = None) -> int:
    """Delete the records that hooks began in ``tmp/`` and never finished (killed by the
    agent's timeout, say): they were never claimable, and never will be."""
    now = time.time() if now is None else now
    n = 0
    try:
        begun = list((spool_dir(state_dir) / TMP).iterdir())
    except OSError:
        return 0
    for path in begun:
        try:
            if now - path.stat().st_mtime > TMP_SECONDS:
                path.unlink()
                n += 1
        except OSError:
            continue
    return n


def bad_records(state_dir: Path) -> list[Path]:
    try:
        return sorted((spool_dir(state_dir) / BAD).iterdir())
    except OSError:
        return []
