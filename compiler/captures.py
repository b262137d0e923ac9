"""From the hooks' spool to the compile queue, and failed captures back into it.

The worker calls :func:`take_spool` before each batch. A session's records wait in the
spool while the session is active (Codex's Stop after every turn, PreCompact) until it
has been quiet for ``session_quiet_seconds``; a SessionEnd is taken at once. The newest
record of a session is taken: its transcript is read and queued as one task
(``session:<agent>:<id>``, replacing a still-queued older version), and every record of
the session is marked taken in the ``captures`` table in the same transaction as the
queue insert. The record files are deleted after that commit, so a crash anywhere
leaves either a record to take again or a row saying it was taken: never a loss, never
a second task.

:func:`retry_due` queues again the session tasks that failed (model down, no model
settings), each after a backoff that doubles with every attempt.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from compiler.queue import TaskQueue
from kb_ai.errors import KbAiError
from kb_ai.hooks import spool
from kb_ai.settings import Settings
from wiki import KnowledgeBase, apply_migrations
from wiki.actors import Actor

MIGRATIONS = (
    "CREATE TABLE captures (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, agent TEXT NOT NULL,"
    " transcript_path TEXT NOT NULL, cwd TEXT, event TEXT, at REAL NOT NULL, state TEXT NOT NULL,"
    " error TEXT, task_id TEXT, taken_at TEXT NOT NULL)",
    "CREATE INDEX captures_state ON captures(state, at)",
    "ALTER TABLE captures ADD COLUMN attempts INTEGER NOT NULL DEFAULT 1",
)
MAX_BACKOFF_SECONDS = 6 * 3600


@dataclass
class SpoolResult:
    taken: int = 0  # sessions queued
    failed: int = 0  # sessions whose transcript could not be read
    waiting: int = 0  # records left for a session that is still active
    next_at: float | None = None  # when the first of those is due
    task_ids: list[str] = field(default_factory=list)


def agent_actor(name: object) -> Actor | None:
    """The coding agent a captured session came from, as the author of its compile (None
    when the hook named none git could write)."""
    clean = " ".join(str(name or "").replace("<", " ").replace(">", " ").split())
    return Actor.agent(clean) if clean else None


def open_captures(conn: sqlite3.Connection) -> None:
    apply_migrations(conn, "captures", MIGRATIONS)


def _read_records(paths: list[Path]) -> list[tuple[Path, dict[str, Any]]]:
    out = []
    for path in paths:
        record = spool.read(path)
        if record is not None:
            out.append((path, record))
    return out


def take_spool(
    kb: KnowledgeBase, conn: sqlite3.Connection, settings: Settings, *, now: float | None = None
) -> SpoolResult:
    """Queue the sessions of the spool whose records are due (see the module docstring)."""
    open_captures(conn)
    now = time.time() if now is None else now
    spool.reclaim(kb.state_dir)
    spool.sweep_tmp(kb.state_dir, now=now)
    result = SpoolResult()
    sessions: dict[tuple[str, str], list[tuple[Path, dict[str, Any]]]] = {}
    for path, record in _read_records(spool.pending(kb.state_dir)):
        key = (str(record.get("agent") or ""), str(record.get("session_id") or path.name))
        sessions.setdefault(key, []).append((path, record))
    for records in sessions.values():
        newest = records[-1][1]
        due = float(newest.get("time") or 0) + settings.session_quiet_seconds
        if newest.get("event") in spool.ONGOING_EVENTS and due > now:
            result.waiting += len(records)
            result.next_at = due if result.next_at is None else min(result.next_at, due)
            continue
        claimed = [(c, r) for p, r in records if (c := spool.claim(kb.state_dir, p)) is not None]
        if claimed:
            _take(kb, conn, settings, claimed, result)
    return result


def _take(
    kb: KnowledgeBase,
    conn: sqlite3.Connection,
    settings: Settings,
    claimed: list[tuple[Path, dict[str, Any]]],
    result: SpoolResult,
) -> None:
    """Queue the newest record's transcript; mark every record taken, in one transaction."""
    _, newest = claimed[-1]
    queue = TaskQueue(kb, conn)  # migrated before the transaction below begins
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    state, error, content = "queued", None, b""
    try:
        content = _read_transcript(Path(str(newest.get("transcript_path") or "")), settings)
        if not content.strip():
            state, error = "empty", "the transcript is empty"
    except KbAiError as exc:
        state, error = "failed", str(exc)
    try:
        for i, (path, record) in enumerate(claimed):
            conn.execute(
                "INSERT INTO captures (id, session_id, agent, transcript_path, cwd, event, at,"
                " state, error, taken_at, attempts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    spool.record_id(path),
                    str(record.get("session_id") or ""),
                    str(record.get("agent") or ""),
                    str(record.get("transcript_path") or ""),
                    str(record.get("cwd") or ""),
                    str(record.get("event") or ""),
                    float(record.get("time") or 0),
                    state if i == len(claimed) - 1 else "superseded",
                    error,
                    stamp,
                    int(record.get("attempt") or 1),
                ),
            )
        if state == "queued":
            task, _ = queue.submit(
                f"{newest.get('agent')} session {str(newest.get('session_id'))[:8]}",
                content,
                filename=Path(str(newest.get("transcript_path"))).name,
                kind="transcript",
                origin=f"session:{newest.get('agent')}:{newest.get('session_id')}",
                actor=agent_actor(newest.get("agent")),  # the commit's author
            )  # commits the captures rows with the task
            conn.execute(
                "UPDATE captures SET task_id = ? WHERE id = ?",
                (task["id"], spool.record_id(claimed[-1][0])),
            )
            result.task_ids.append(task["id"])
        conn.commit()
    except sqlite3.IntegrityError:
        conn.rollback()  # taken before: a crash came between that commit and the delete
    except BaseException:
        conn.rollback()
        raise  # the records stay claimed: taken back when this process is gone
    else:
        if state == "queued":
            result.taken += 1
        elif state == "failed":
            result.failed += 1
    for path, _ in claimed:
        path.unlink(missing_ok=True)


def _read_transcript(path: Path, settings: Settings) -> bytes:
    from kb_ai.errors import SourceError

    try:
        size = path.stat().st_size
    except OSError as exc:
        raise SourceError(f"cannot read the transcript {path} ({exc.strerror})") from exc
    limit = max(settings.max_transcript_bytes, settings.max_source_bytes)
    if size > limit:
        raise SourceError(
            f"the transcript {path} is {size:,} bytes, over the {limit:,}-byte limit",
            hint="raise max_transcript_bytes in kb-ai.toml, then: kb-ai hooks retry",
        )
    try:
        return path.read_bytes()
    except OSError as exc:
        raise SourceError(f"cannot read the transcript {path} ({exc.strerror})") from exc


def backoff_seconds(settings: Settings, attempts: int) -> float:
    return min(settings.capture_retry_seconds * 2 ** max(attempts - 1, 0), MAX_BACKOFF_SECONDS)


def retry_due(kb: KnowledgeBase, conn: sqlite3.Connection, settings: Settings) -> list[str]:
    """Queue again the failed session tasks whose backoff has passed, and put back in the
    spool the captures whose transcript could not be read; returns the tasks' ids."""
    open_captures(conn)
    queue = TaskQueue(kb, conn)
    now = datetime.now(UTC)
    for row in conn.execute(
        "SELECT id, session_id, agent, transcript_path, cwd, attempts, taken_at FROM captures"
        " WHERE state = 'failed'"
    ).fetchall():
        wait = timedelta(seconds=backoff_seconds(settings, row[5]))
        if row[5] < settings.capture_max_attempts and datetime.fromisoformat(row[6]) + wait <= now:
            _respool(kb, conn, row)
    due = []
    rows = queue.db.execute(
        "SELECT id, attempts, updated_at FROM tasks WHERE state = 'failed' AND origin LIKE 'session:%'"
    ).fetchall()
    for task_id, attempts, updated_at in rows:
        if attempts >= settings.capture_max_attempts:
            continue
        wait = timedelta(seconds=backoff_seconds(settings, attempts))
        if datetime.fromisoformat(updated_at) + wait <= now:
            queue.retry(task_id)
            due.append(task_id)
    return due


def release_orphans(kb: KnowledgeBase, conn: sqlite3.Connection) -> int:
    """Hand back to the queue the tasks leased by a worker of this machine whose process
    is gone (its lease would otherwise hold them until it expires)."""
    import os
    import socket

    host = socket.gethostname()
    orphans: dict[str, list[str]] = {}
    queue = TaskQueue(kb, conn)
    for task_id, owner in queue.db.execute(
        "SELECT id, lease_owner FROM tasks WHERE state = 'running' AND lease_owner IS NOT NULL"
    ):
        parts = str(owner).split(":")
        if len(parts) < 2 or parts[0] != host or not parts[1].isdigit():
            continue
        pid = int(parts[1])
        if pid == os.getpid() or spool.process_alive(pid):
            continue
        orphans.setdefault(owner, []).append(task_id)
    for owner, ids in orphans.items():
        queue.release(ids, owner)
    return sum(len(ids) for ids in orphans.values())


def _respool(kb: KnowledgeBase, conn: sqlite3.Connection, row: sqlite3.Row | tuple) -> None:
    """A failed capture back in the spool as a new record (its next attempt). Were this to
    stop between the two steps, the session would be queued twice: the same transcript,
    which the queue recognises by its checksum."""
    capture_id, session_id, agent, transcript_path, cwd, attempts = tuple(row)[:6]
    spool.append(
        kb.state_dir,
        {
            "v": 1,
            "session_id": session_id,
            "transcript_path": transcript_path,
            "agent": agent,
            "cwd": cwd,
            "event": "SessionEnd",  # taken at once: it waited long enough
            "time": time.time(),
            "attempt": attempts + 1,
        },
    )
    with conn:
        conn.execute("UPDATE captures SET state = 'retried' WHERE id = ?", (capture_id,))


def retry_all(kb: KnowledgeBase, conn: sqlite3.Connection) -> tuple[int, int]:
    """`kb-ai hooks retry`: every failed session task queued again now, and every capture
    whose transcript could not be read put back in the spool. Returns (tasks, captures)."""
    open_captures(conn)
    queue = TaskQueue(kb, conn)
    ids = [
        r[0]
        for r in queue.db.execute(
            "SELECT id FROM tasks WHERE state = 'failed' AND origin LIKE 'session:%'"
        )
    ]
    for task_id in ids:
        queue.retry(task_id)
    rows = conn.execute(
        "SELECT id, session_id, agent, transcript_path, cwd, attempts FROM captures"
        " WHERE state = 'failed'"
    ).fetchall()
    for row in rows:
        _respool(kb, conn, row)
    return len(ids), len(rows)
