"""Chat sessions, kept in the knowledge base's state.db so they can be reopened; with a
shared database (``database_url``) in PostgreSQL, so any server continues any session.

A session belongs to the person who began it (``owner``, their name): a store opened for
a person shows, continues, renames and deletes only theirs; anyone else's is "No chat
session" to them, an admin's store too (questions are private). Sessions no person owns
(begun before there were people, with the server's token, by the loopback user or at
the terminal) have no owner: a store opened for no person shows those, and an admin's
store shows them beside the admin's own."""

from __future__ import annotations

import json
import sqlite3
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kb_ai.errors import NotFoundError, UsageError
from retrieval.ask import Turn
from wiki import one_line
from wiki.database import store_connection

if TYPE_CHECKING:
    from retrieval.answer import Answer

MIGRATIONS = (
    "CREATE TABLE chat_sessions (id TEXT PRIMARY KEY, title TEXT NOT NULL, created_at TEXT NOT NULL,"
    " updated_at TEXT NOT NULL)",
    "CREATE TABLE chat_messages (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL"
    " REFERENCES chat_sessions(id) ON DELETE CASCADE, role TEXT NOT NULL, content TEXT NOT NULL,"
    " citations TEXT NOT NULL DEFAULT '[]', created_at TEXT NOT NULL)",
    "CREATE INDEX chat_messages_session ON chat_messages(session_id, id)",
    # Who began the session (a person's name); NULL for the sessions no person owns.
    "ALTER TABLE chat_sessions ADD COLUMN owner TEXT",
    "CREATE INDEX chat_sessions_owner ON chat_sessions(owner, updated_at)",
    # What was shown with an answer besides its text and sources, so that a reopened
    # session shows it again: the citation-faithfulness line ("Cited claims: ...") and
    # the notes above the answer (a JSON list). NULL in the rows from before: no line.
    "ALTER TABLE chat_messages ADD COLUMN checked TEXT",
    "ALTER TABLE chat_messages ADD COLUMN notes TEXT",
    # An answer that failed (the model timed out, the breaker was open...): the error in
    # kb-ai's one error shape (JSON), its content empty. NULL in every other row.
    "ALTER TABLE chat_messages ADD COLUMN error TEXT",
)
TITLE_MAX = 120
#: How much of a failed answer's error message and hint is kept (a short entry).
ERROR_MAX = 500


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _short(text: str) -> str:
    return text if len(text) <= ERROR_MAX else text[: ERROR_MAX - 1] + "…"


@dataclass(frozen=True)
class _Message:
    """One row of chat_messages, as it is written."""

    role: str
    content: str
    citations: list[dict] | None = None
    checked: str = ""
    notes: list[str] | None = None
    error: dict[str, Any] | None = None


def _failed(error: dict[str, Any], notes: list[str] | None) -> _Message:
    """The message of an answer that failed: ``error`` kept short, in the one shape."""
    kept = {"ok": False, "error": _short(str(error.get("error") or "the answer failed"))}
    kept |= {k: error[k] for k in ("status", "kind") if error.get(k) is not None}
    if error.get("hint"):
        kept["hint"] = _short(str(error["hint"]))
    return _Message("assistant", "", None, "", notes, kept)


class ChatStore:
    """The sessions of one owner and their messages. Takes an open connection to
    state.db (with a shared database, the sessions are there instead: the same SQL,
    wiki/database.py).

    ``owner``: the person whose sessions these are (None: the sessions no person owns);
    ``ownerless``: show the sessions no person owns as well (an admin's store; the
    default for ``owner`` None). A session this store does not show is not found."""

    def __init__(
        self, conn: sqlite3.Connection, owner: str | None = None, *, ownerless: bool = False
    ) -> None:
        if isinstance(conn, sqlite3.Connection):
            conn.execute("PRAGMA foreign_keys = ON")  # (PostgreSQL always keeps them)
        self.conn: Any = store_connection(conn, "chat", MIGRATIONS)
        self.owner = owner
        if owner is None:
            self._scope, self._params = "owner IS NULL", ()
        elif ownerless:
            self._scope, self._params = "(owner = ? OR owner IS NULL)", (owner,)
        else:
            self._scope, self._params = "owner = ?", (owner,)

    def create(self, title: str = "New chat") -> dict[str, Any]:
        """A new session, owned by this store's owner."""
        sid = uuid.uuid4().hex[:16]
        now = _now()
        clean = one_line(title)[:TITLE_MAX] or "New chat"
        with self.conn:
            self.conn.execute(
                "INSERT INTO chat_sessions (id, title, created_at, updated_at, owner)"
                " VALUES (?, ?, ?, ?, ?)",
                (sid, clean, now, now, self.owner),
            )
        return {"id": sid, "title": clean, "created_at": now, "updated_at": now}

    def list(self) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT s.id, s.title, s.created_at, s.updated_at,"
            # questions and answers: a failed answer is none
            " (SELECT count(*) FROM chat_messages m WHERE m.session_id = s.id"
            " AND m.error IS NULL) AS messages"
            f" FROM chat_sessions s WHERE {self._scope} ORDER BY s.updated_at DESC, s.id",
            self._params,
        )
        return [
            dict(zip(("id", "title", "created_at", "updated_at", "messages"), r, strict=True))
            for r in rows
        ]

    def get(self, sid: str) -> dict[str, Any]:
        row = self.conn.execute(
            f"SELECT id, title, created_at, updated_at FROM chat_sessions WHERE id = ? AND {self._scope}",
            (sid, *self._params),
        ).fetchone()
        if row is None:
            raise NotFoundError(f"No chat session {sid!r}")
        messages = [
            {
                "role": r[0],
                "content": r[1],
                "citations": json.loads(r[2]),
                "created_at": r[3],
                "checked": r[4] or "",
                "notes": json.loads(r[5]) if r[5] else [],
                "error": json.loads(r[6]) if r[6] else None,
            }
            for r in self.conn.execute(
                "SELECT role, content, citations, created_at, checked, notes, error"
                " FROM chat_messages"
                " WHERE session_id = ? ORDER BY id",
                (sid,),
            )
        ]
        return {
            "id": row[0],
            "title": row[1],
            "created_at": row[2],
            "updated_at": row[3],
            "messages": messages,
        }

    def history(self, sid: str) -> list[Turn]:
        """The conversation as the model is told it: a failed answer is no turn (its
        question is, as a question the server stopped on is)."""
        return [Turn(m["role"], m["content"]) for m in self.get(sid)["messages"] if not m["error"]]

    def append(
        self,
        sid: str,
        role: str,
        content: str,
        citations: list[dict] | None = None,
        *,
        checked: str = "",
        notes: list[str] | None = None,
    ) -> None:
        """Add a message; an answer's with what was shown beside it: its sources
        (``citations``), its citation-faithfulness line (``checked``, Answer.checked)
        and the notes above it."""
        self._insert(sid, _Message(role, content, citations, checked, notes))

    def keep_answer(self, sid: str, question: str, answer: Answer, notes: list[str]) -> None:
        """A question and its answer as they were shown (sources, the checked line, the
        notes above it), together: the web chat and ``kb-ai chat`` keep a turn so."""
        citations = [c.as_dict() for c in answer.citations]
        reply = _Message("assistant", answer.answer, citations, answer.checked, notes)
        self._insert(sid, _Message("user", question), reply)

    def keep_failed(self, sid: str, question: str, error: dict[str, Any], notes: list[str]) -> None:
        """A question and the answer that failed, together: ``error`` in kb-ai's one error
        shape (error_fields), its message and hint kept short; no text, no sources, no
        checked line."""
        self._insert(sid, _Message("user", question), _failed(error, notes))

    def _insert(self, sid: str, *messages: _Message) -> None:
        """Add ``messages`` in one transaction (the session must be one of the owner's)."""
        for m in messages:
            if m.role not in ("user", "assistant"):
                raise UsageError(f"unknown role {m.role!r}")
        self.get(sid)
        now = _now()
        with self.conn:
            for m in messages:
                self.conn.execute(
                    "INSERT INTO chat_messages (session_id, role, content, citations,"
                    " created_at, checked, notes, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        sid,
                        m.role,
                        m.content,
                        json.dumps(m.citations or [], ensure_ascii=False),
                        now,
                        m.checked or None,
                        json.dumps(m.notes, ensure_ascii=False) if m.notes else None,
                        json.dumps(m.error, ensure_ascii=False) if m.error else None,
                    ),
                )
            self.conn.execute("UPDATE chat_sessions SET updated_at = ? WHERE id = ?", (now, sid))

    def rename(self, sid: str, title: str) -> dict[str, Any]:
        clean = one_line(title)[:TITLE_MAX]
        if not clean:
            raise UsageError("A session title cannot be empty")
        with self.conn:
            cur = self.conn.execute(
                f"UPDATE chat_sessions SET title = ? WHERE id = ? AND {self._scope}",
                (clean, sid, *self._params),
            )
        if cur.rowcount == 0:
            raise NotFoundError(f"No chat session {sid!r}")
        return self.get(sid)

    def delete(self, sid: str) -> None:
        with self.conn:  # a session this store does not show: nothing is deleted
            cur = self.conn.execute(
                f"DELETE FROM chat_sessions WHERE id = ? AND {self._scope}", (sid, *self._params)
            )
            if cur.rowcount == 0:
                raise NotFoundError(f"No chat session {sid!r}")
            self.conn.execute("DELETE FROM chat_messages WHERE session_id = ?", (sid,))


def delete_sessions_of(conn: sqlite3.Connection, person: str) -> int:
    """Delete every session ``person`` owns, with its messages (the person is removed);
    how many there were."""
    store = ChatStore(conn, person)
    with store.conn:
        store.conn.execute(
            "DELETE FROM chat_messages WHERE session_id IN"
            " (SELECT id FROM chat_sessions WHERE owner = ?)",
            (person,),
        )
        cur = store.conn.execute("DELETE FROM chat_sessions WHERE owner = ?", (person,))
    return cur.rowcount
