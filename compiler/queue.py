"""The compile queue: submissions wait on disk and in SQLite until a worker compiles them.

A submission is spooled to ``.kb-ai/inbox/`` and recorded in the ``tasks`` table before
the caller is told it was accepted, so nothing submitted is lost; the spooled copy is
deleted once the task is compiled (or deleted), and its title is redacted like a
source's text. A task whose run waits on a review branch keeps its copy until the run
is approved; when the run is rejected the task fails with the reason, ready to retry.
A worker claims tasks with a lease, and holds a lock file named after itself
(``.kb-ai/leases/``) while it lives. A worker that dies leaves a lease behind:
the next worker takes the task at once when the owner's lock file is free (the kernel
released it with the dead process), else when the lease expires. Duplicate content is
recognised by its hash. Failed tasks keep their error and can be retried.

Beside each spooled copy, ``inbox-about/<id>.json`` keeps what the task table knows of it (title,
file name, kind, origin), so a state.db that was lost gets its queue back: every copy
still in the inbox (queued, running or failed then) is queued again (see wiki/rebuild.py).
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from compiler.redact import redact_name, redact_submitted
from kb_ai.errors import NotFoundError, SourceError, StorageError, UsageError, file_storage_error
from wiki import KnowledgeBase, atomic_write_bytes, atomic_write_text, one_line
from wiki.actors import Actor
from wiki.database import LOCK_OWNER, Hold, PgConnection, shared_database, store_connection
from wiki.lock import KbLock
from wiki.state import note_rebuilt, state_loss

log = logging.getLogger(__name__)

MIGRATIONS = (
    "CREATE TABLE tasks (id TEXT PRIMARY KEY, title TEXT NOT NULL, filename TEXT NOT NULL,"
    " kind TEXT NOT NULL, checksum TEXT NOT NULL, size INTEGER NOT NULL, state TEXT NOT NULL,"
    " stage TEXT, error TEXT, attempts INTEGER NOT NULL DEFAULT 0, lease_owner TEXT,"
    " lease_expires TEXT, result TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL)",
    "CREATE INDEX tasks_state ON tasks(state, created_at)",
    "CREATE INDEX tasks_checksum ON tasks(checksum)",
    "ALTER TABLE tasks ADD COLUMN origin TEXT",
    # who submitted it (wiki/actors.py, as JSON): the author of the commit compiling it
    "ALTER TABLE tasks ADD COLUMN actor TEXT",
    # the id of the source a person said the document revises (compiler/identity.py)
    "ALTER TABLE tasks ADD COLUMN revises TEXT",
)
# With a shared database: the kept copies live in it (a worker on another machine
# compiles them), and the workers that ever held an owner's advisory lock are named.
SHARED_MIGRATIONS = (
    "CREATE TABLE task_copies (id TEXT PRIMARY KEY, content BYTEA NOT NULL)",
    "CREATE TABLE task_owners (owner TEXT PRIMARY KEY, since TEXT NOT NULL)",
)
STATES = ("queued", "running", "done", "failed")
COLUMNS = (
    "id",
    "title",
    "filename",
    "kind",
    "checksum",
    "size",
    "state",
    "stage",
    "error",
    "attempts",
    "lease_owner",
    "lease_expires",
    "result",
    "created_at",
    "updated_at",
    "origin",
    "actor",
    "revises",
)


def task_actor(task: dict[str, Any]) -> Actor | None:
    """Who submitted ``task`` (None: recorded before actors were, or by no one)."""
    return Actor.of(task["actor"]) if task.get("actor") else None


def owner_lock_path(kb: KnowledgeBase, owner: str) -> Path:
    """The lock file a live worker named ``owner`` holds (see :func:`hold_owner`)."""
    digest = hashlib.sha256(owner.encode()).hexdigest()[:24]
    return kb.state_dir / "leases" / f"{digest}.lock"


def hold_owner(kb: KnowledgeBase, owner: str) -> KbLock | Hold:
    """Take ``owner``'s lock file, to hold for as long as the worker lives: a running task
    whose owner's lock file is there but free was left by a process that died. With a
    shared database, an advisory lock in it instead, the owner named in ``task_owners``."""
    db = shared_database(kb)
    if db is not None:
        db.migrate("queue", MIGRATIONS + SHARED_MIGRATIONS)
        hold = Hold(db, LOCK_OWNER, owner)
        if not hold.acquire(blocking=False):
            raise UsageError(f"Another worker already runs as {owner!r}")
        PgConnection(db).execute(
            "INSERT INTO task_owners (owner, since) VALUES (?, ?) ON CONFLICT(owner) DO NOTHING",
            (owner, _stamp(_now())),
        )
        return hold
    lock = KbLock(owner_lock_path(kb, owner))
    if not lock.acquire(blocking=False):
        raise UsageError(f"Another worker already runs as {owner!r}")
    return lock


def keep_owner(kb: KnowledgeBase, owner: str, lock: KbLock | Hold) -> bool:
    """Take ``owner``'s advisory lock again if its connection dropped (a database
    restart frees it with the session), so other workers see this one alive again;
    whether it is held now. A lock file cannot be lost so."""
    if not isinstance(lock, Hold) or lock.held():
        return True
    if not lock.retake():
        return False
    PgConnection(lock.db).execute(  # another worker's claim deleted it, thinking us dead
        "INSERT INTO task_owners (owner, since) VALUES (?, ?) ON CONFLICT(owner) DO NOTHING",
        (owner, _stamp(_now())),
    )
    return True


def release_owner(kb: KnowledgeBase, owner: str, lock: KbLock | Hold) -> None:
    """Remove and release ``owner``'s lock file (the worker is stopping)."""
    if isinstance(lock, Hold):
        PgConnection(lock.db).execute("DELETE FROM task_owners WHERE owner = ?", (owner,))
    else:
        owner_lock_path(kb, owner).unlink(missing_ok=True)
    lock.release()


def kept_copy(content: bytes, filename: str) -> bytes:
    """What the inbox keeps of a submission until it is compiled (and, failed, for Retry):
    text redacted, as UTF-8 (a transcript's JSON string by string, so it stays JSON); a
    document (PDF, slides, ...) as it came, its text redacted once it is converted."""
    from compiler.documents import format_of
    from compiler.sources import decode_text

    if format_of(filename):
        return content
    try:
        text = decode_text(content, filename or "the submission")
    except SourceError:
        return content  # not text: the worker refuses it, saying why
    return redact_submitted(text)[0].encode("utf-8")


def _now() -> datetime:
    return datetime.now(UTC)


def _stamp(when: datetime) -> str:
    return when.isoformat(timespec="milliseconds")


class TaskQueue:
    """Tasks of one knowledge base. Takes an open connection to its state.db; with a
    shared database (wiki/database.py) the tasks, their kept copies and their leases are
    in PostgreSQL instead (``self.db``), the same SQL through :class:`PgConnection`."""

    def __init__(self, kb: KnowledgeBase, conn: sqlite3.Connection) -> None:
        self.kb = kb
        self.conn = conn
        # with a shared database the tasks live in PostgreSQL, shared by every server
        self.db: Any = store_connection(
            conn, "queue", MIGRATIONS, MIGRATIONS + SHARED_MIGRATIONS, kb=kb
        )
        self.shared = self.db.db if isinstance(self.db, PgConnection) else None
        if self.shared is not None:
            return
        loss = state_loss(conn)
        lost = loss is not None and "tasks" not in (loss.get("rebuilt") or {})
        if lost and not conn.in_transaction:  # (in one: the next queue opened does it)
            self._requeue_inbox()

    @property
    def inbox(self) -> Path:
        return self.kb.state_dir / "inbox"

    def spool_path(self, task_id: str) -> Path:
        return self.inbox / f"{task_id}.txt"

    def _about_path(self, task_id: str) -> Path:
        return self.kb.state_dir / "inbox-about" / f"{task_id}.json"

    def _drop_copy(self, task_id: str) -> None:
        if self.shared is not None:
            self.db.execute("DELETE FROM task_copies WHERE id = ?", (task_id,))
            return
        self.spool_path(task_id).unlink(missing_ok=True)
        self._about_path(task_id).unlink(missing_ok=True)

    def _keep_copy(self, task_id: str, stored: bytes) -> None:
        """In the shared database (inside the caller's transaction): the kept copy."""
        self.db.execute(
            "INSERT INTO task_copies (id, content) VALUES (?, ?)"
            " ON CONFLICT(id) DO UPDATE SET content = excluded.content",
            (task_id, stored),
        )

    def _notify(self) -> None:
        """Wake the workers sharing the database: a task is there to claim."""
        if self.shared is not None:
            self.shared.notify()

    def _requeue_inbox(self) -> None:
        """state.db was made again: each copy in the inbox is a task again, queued. In
        one write transaction, so two threads doing it at once queue each copy once."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            loss = state_loss(self.conn)
            if loss is None or "tasks" in (loss.get("rebuilt") or {}):  # done meanwhile
                self.db.commit()
                return
            known = {r[0] for r in self.db.execute("SELECT id FROM tasks")}
            count = 0
            for path in sorted(self.inbox.glob("*.txt")) if self.inbox.is_dir() else []:
                if path.stem not in known:
                    self._requeue(path)
                    count += 1
            note_rebuilt(self.conn, tasks=count)
            self.db.commit()
        except BaseException:
            self.db.rollback()
            raise

    def _requeue(self, path: Path) -> None:
        task_id = path.stem
        about = self._about_path(task_id)
        try:
            meta = json.loads(about.read_text(encoding="utf-8")) if about.is_file() else {}
        except (OSError, ValueError):
            meta = {}
        content = path.read_bytes()
        now = _stamp(_now())
        self.db.execute(
            "INSERT INTO tasks (id, title, filename, kind, checksum, size, state,"
            " created_at, updated_at, origin, actor, revises)"
            " VALUES (?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?)",
            (
                task_id,
                str(meta.get("title") or f"recovered upload {task_id}"),
                str(meta.get("filename") or ""),
                str(meta.get("kind") or "note"),
                str(meta.get("checksum") or hashlib.sha256(content).hexdigest()),
                int(meta.get("size") or len(content)),
                str(meta.get("created_at") or now),
                now,
                meta.get("origin"),
                meta.get("actor"),
                meta.get("revises"),
            ),
        )

    def submit(
        self,
        title: str,
        content: bytes,
        *,
        filename: str = "",
        kind: str = "note",
        origin: str | None = None,
        actor: Actor | None = None,
        revises: str = "",
    ) -> tuple[dict[str, Any], bool]:
        """Queue a document. Returns (task, created); created is False for a duplicate of a
        task that is queued, running or done (a failed one is queued again).

        ``origin`` names a document that changes over time (an agent session captured at
        every turn): a newer version replaces a still-queued older one, and compiles as a
        revision of the same source. ``actor``: who submitted it, the author of the
        commit that compiles it (see :func:`task_actor`). ``revises``: the id of the
        source a person said it revises; such a document is queued even when its content
        was compiled before."""
        if not content.strip():
            raise UsageError(
                "The document is empty", hint="paste some text or choose a non-empty file"
            )
        checksum = hashlib.sha256(content).hexdigest()  # of what was sent: duplicates
        origin = redact_name(origin) if origin is not None else None
        stored = kept_copy(content, filename)
        if origin is not None:
            waiting = self.db.execute(
                "SELECT id FROM tasks WHERE origin = ? AND state = 'queued' ORDER BY created_at DESC LIMIT 1",
                (origin,),
            ).fetchone()
            if waiting is not None:
                if self.shared is None:
                    atomic_write_bytes(self.spool_path(waiting[0]), stored)
                with self.db:
                    if self.shared is not None:
                        self._keep_copy(waiting[0], stored)
                    self.db.execute(
                        "UPDATE tasks SET checksum = ?, size = ?, updated_at = ? WHERE id = ?",
                        (checksum, len(content), _stamp(_now()), waiting[0]),
                    )
                return self.get(waiting[0]), False
        existing = self.db.execute(
            "SELECT * FROM tasks WHERE checksum = ? ORDER BY created_at DESC LIMIT 1", (checksum,)
        ).fetchone()
        if existing is not None and not revises:
            task = self._row(existing)
            if task["state"] == "failed":
                return self.retry(task["id"]), True
            return task, False
        task_id = uuid.uuid4().hex[:16]
        now = _stamp(_now())
        clean_title = one_line(redact_name(title))[:200]
        clean_filename = one_line(redact_name(filename))[:200]
        who = json.dumps(actor.as_dict()) if actor is not None else None
        about = {"title": clean_title, "filename": clean_filename, "kind": kind}
        about |= {"origin": origin, "actor": who, "checksum": checksum, "size": len(content)}
        about["revises"] = revises.strip() or None
        try:
            if self.shared is None:
                atomic_write_bytes(self.spool_path(task_id), stored)
                atomic_write_text(
                    self._about_path(task_id),
                    json.dumps({**about, "created_at": now}, ensure_ascii=False),
                )
        except OSError as exc:  # a full disk, a read-only folder: nothing was queued
            self._drop_copy(task_id)
            raise file_storage_error(exc, self.inbox, "keep the upload in") from exc
        try:
            with self.db:
                self.db.execute(
                    "INSERT INTO tasks (id, title, filename, kind, checksum, size, state, created_at,"
                    " updated_at, origin, actor, revises)"
                    " VALUES (?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?)",
                    (
                        task_id,
                        clean_title,
                        clean_filename,
                        kind,
                        checksum,
                        len(content),
                        now,
                        now,
                        origin,
                        who,
                        about["revises"],
                    ),
                )
                if self.shared is not None:
                    self._keep_copy(task_id, stored)
        except StorageError:  # not queued: no copy left behind for a rebuild to find
            if self.shared is None:
                self._drop_copy(task_id)
            raise
        self._notify()
        return self.get(task_id), True

    def claim(
        self, owner: str, *, limit: int = 1, lease_seconds: float = 300.0
    ) -> list[dict[str, Any]]:
        """Lease up to ``limit`` tasks: queued ones, running ones whose lease expired, and
        running ones whose owner is dead (see :meth:`hold`)."""
        now = _now()
        expires = _stamp(now + timedelta(seconds=lease_seconds))
        dead = self._dead_owners(owner)
        marks = ",".join("?" * len(dead)) or "NULL"  # PostgreSQL takes no empty IN ()
        self.db.execute("BEGIN IMMEDIATE")
        try:
            rows = self.db.execute(
                "SELECT id FROM tasks WHERE state = 'queued'"
                " OR (state = 'running' AND lease_expires < ?)"
                f" OR (state = 'running' AND lease_owner IN ({marks}))"
                " ORDER BY created_at, id LIMIT ?"
                # another server's claim under way: its rows skipped, not waited for
                + (" FOR UPDATE SKIP LOCKED" if self.shared is not None else ""),
                (_stamp(now), *dead, limit),
            ).fetchall()
            ids = [r[0] for r in rows]
            for task_id in ids:
                self.db.execute(
                    "UPDATE tasks SET state = 'running', stage = 'queued', lease_owner = ?, lease_expires = ?,"
                    " attempts = attempts + 1, error = NULL, updated_at = ? WHERE id = ?",
                    (owner, expires, _stamp(now), task_id),
                )
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return [self.get(i) for i in ids]

    def _dead_owners(self, me: str) -> list[str]:
        """Owners of live leases whose lock file is there but held by no one: dead."""
        owners = [
            r[0]
            for r in self.db.execute(
                "SELECT DISTINCT lease_owner FROM tasks WHERE state = 'running'"
                " AND lease_owner IS NOT NULL AND lease_owner != ?",
                (me,),
            )
        ]
        if self.shared is not None:
            return self._dead_shared_owners(owners)
        dead = []
        for owner in owners:
            path = owner_lock_path(self.kb, owner)
            if not path.exists():  # an owner that never held one: wait for its lease
                continue
            lock = KbLock(path)
            if lock.acquire(blocking=False):
                dead.append(owner)
                path.unlink(missing_ok=True)
                lock.release()
        return dead

    def _dead_shared_owners(self, owners: list[str]) -> list[str]:
        """Owners that once held their advisory lock and hold it no more: their process
        died (the server freed the lock with its session), on whichever machine."""
        held = {r[0] for r in self.db.execute("SELECT owner FROM task_owners")}
        dead = [o for o in owners if o in held and not self.shared.owner_alive(o)]
        for owner in dead:
            self.db.execute("DELETE FROM task_owners WHERE owner = ?", (owner,))
        return dead

    def renew(self, task_ids: list[str], owner: str, *, lease_seconds: float = 300.0) -> None:
        expires = _stamp(_now() + timedelta(seconds=lease_seconds))
        with self.db:
            self.db.executemany(
                "UPDATE tasks SET lease_expires = ? WHERE id = ? AND lease_owner = ? AND state = 'running'",
                [(expires, t, owner) for t in task_ids],
            )

    def taken_from(self, task_ids: list[str], owner: str) -> list[str]:
        """Those of ``task_ids`` no longer running under ``owner``'s lease: another
        worker took them (its lease expired, or it seemed dead: its lock was lost)."""
        if not task_ids:
            return []
        marks = ",".join("?" * len(task_ids))
        rows = self.db.execute(
            f"SELECT id FROM tasks WHERE state = 'running' AND lease_owner = ? AND id IN ({marks})",
            (owner, *task_ids),
        )
        mine = {r[0] for r in rows}
        return [t for t in task_ids if t not in mine]

    def set_stage(self, task_ids: list[str], stage: str, owner: str | None = None) -> None:
        """The stage the tasks' compile is at (``owner``: only those still under its lease)."""
        now = _stamp(_now())
        mine = " AND lease_owner = ?" if owner is not None else ""
        with self.db:
            self.db.executemany(
                f"UPDATE tasks SET stage = ?, updated_at = ? WHERE id = ? AND state = 'running'{mine}",
                [(stage, now, t, *((owner,) if owner is not None else ())) for t in task_ids],
            )

    def finish(
        self,
        task_id: str,
        *,
        error: str | None = None,
        result: dict | None = None,
        owner: str | None = None,
    ) -> bool:
        """Record the outcome. A compiled task's spooled copy is deleted (its text is in
        raw/ now, redacted); a failed one keeps it, to be retried, and so does one whose
        run waits on a review branch (``result["review"]``) until it is approved.

        ``owner``: the worker whose lease the outcome comes from. A lease that expired,
        or was taken back because the worker seemed dead, may be another worker's now:
        then nothing is recorded (the task is that worker's to finish), the copy stays,
        and the log says so. Returns whether the outcome was recorded."""
        state = "failed" if error else "done"
        held = bool((result or {}).get("review"))
        mine = " AND lease_owner = ? AND state = 'running'" if owner is not None else ""
        with self.db:
            cursor = self.db.execute(
                "UPDATE tasks SET state = ?, stage = NULL, error = ?, result = ?, lease_owner = NULL,"
                f" lease_expires = NULL, updated_at = ? WHERE id = ?{mine}",
                (
                    state,
                    error,
                    json.dumps(result or {}, ensure_ascii=False),
                    _stamp(_now()),
                    task_id,
                    *((owner,) if owner is not None else ()),
                ),
            )
        if owner is not None and cursor.rowcount == 0:
            log.warning(
                "task %s was taken over by another worker (the lease of %s ended): its"
                " outcome here (%s) is not recorded, the task is the other worker's to finish",
                task_id, owner, state,
            )  # fmt: skip
            return False
        if state == "done" and not held:
            self._drop_copy(task_id)
        return True

    def held_in_review(self, branch: str) -> list[dict[str, Any]]:
        """The done tasks whose run waits on ``branch`` (review/<run>)."""
        rows = self.db.execute(
            "SELECT * FROM tasks WHERE state = 'done' AND json_extract(result, '$.review') = ?"
            " ORDER BY created_at, id",
            (branch,),
        )
        return [self._row(r) for r in rows]

    def settle_review(self, branch: str, *, approved: bool) -> list[dict[str, Any]]:
        """The run on ``branch`` was approved (its tasks' spooled copies go) or rejected
        (its tasks fail with the reason, their copies kept, so Retry compiles them again
        and nothing submitted is lost). Returns those tasks as they are now."""
        tasks = self.held_in_review(branch)
        if approved:
            for task in tasks:
                self._drop_copy(task["id"])
            return tasks
        run = branch.removeprefix("review/")
        error = (
            f"its compile run {run} was rejected in review, so nothing of it is in the wiki:"
            " Retry compiles it again, Delete drops it"
        )
        with self.db:
            self.db.executemany(
                "UPDATE tasks SET state = 'failed', error = ?, updated_at = ? WHERE id = ?",
                [(error, _stamp(_now()), t["id"]) for t in tasks],
            )
        return [self.get(t["id"]) for t in tasks]

    def release(self, task_ids: list[str], owner: str) -> None:
        """Hand tasks back to the queue untouched (the worker is stopping)."""
        with self.db:
            self.db.executemany(
                "UPDATE tasks SET state = 'queued', stage = NULL, lease_owner = NULL, lease_expires = NULL"
                " WHERE id = ? AND lease_owner = ? AND state = 'running'",
                [(t, owner) for t in task_ids],
            )
        self._notify()

    def retry(self, task_id: str) -> dict[str, Any]:
        task = self.get(task_id)
        if task["state"] != "failed":
            raise UsageError(f"Task {task_id} is {task['state']}; only failed tasks can be retried")
        with self.db:
            self.db.execute(
                "UPDATE tasks SET state = 'queued', error = NULL, updated_at = ? WHERE id = ?",
                (_stamp(_now()), task_id),
            )
        self._notify()
        return self.get(task_id)

    def delete(self, task_id: str) -> None:
        task = self.get(task_id)
        if task["state"] == "running":
            raise UsageError(f"Task {task_id} is being compiled; delete it when it has finished")
        with self.db:
            self.db.execute("DELETE FROM tasks WHERE id = ?", (task_id,))
        self._drop_copy(task_id)

    def get(self, task_id: str) -> dict[str, Any]:
        row = self.db.execute("SELECT * FROM tasks WHERE id = ?", (task_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"No task {task_id!r}", hint="list tasks with GET /api/tasks")
        return self._row(row)

    def list(self, limit: int = 200) -> list[dict[str, Any]]:
        rows = self.db.execute("SELECT * FROM tasks ORDER BY created_at DESC, id LIMIT ?", (limit,))
        return [self._row(r) for r in rows]

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(STATES, 0)
        for state, n in self.db.execute("SELECT state, count(*) FROM tasks GROUP BY state"):
            counts[state] = n
        return counts

    def read_content(self, task_id: str) -> bytes:
        if self.shared is not None:
            row = self.db.execute(
                "SELECT content FROM task_copies WHERE id = ?", (task_id,)
            ).fetchone()
            if row is None:
                raise NotFoundError(f"The submitted file of task {task_id} is gone")
            return bytes(row[0])
        path = self.spool_path(task_id)
        try:
            return path.read_bytes()
        except FileNotFoundError as exc:
            raise NotFoundError(
                f"The submitted file of task {task_id} is gone from {path}"
            ) from exc

    @staticmethod
    def _row(row: sqlite3.Row | tuple) -> dict[str, Any]:
        task = dict(zip(COLUMNS, tuple(row), strict=True))
        task["result"] = json.loads(task["result"]) if task["result"] else None
        task["actor"] = json.loads(task["actor"]) if task["actor"] else None
        return task
