"""Chat sessions, kept in the knowledge base's state.db so they can be reopened; with a
shared database (``database_url``) in PostgreSQL, so any server continues any session."""

from __future__ import annotations

import json
import sqlite3
import uuid
from datetime import UTC, datetime
from typing import Any

from kb_ai.errors import NotFoundError, UsageError
from retrieval.ask import Turn
from wiki import one_line
from wiki.database import store_connection

MIGRATIONS = (
    "CREATE TABLE chat_sessions (id TEXT PRIMARY KEY, title TEXT NOT NULL, created_at TEXT NOT NULL,"
    " updated_at TEXT NOT NULL)",
    "CREATE TABLE chat_messages (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL"
    " REFERENCES chat_sessions(id) ON DELETE CASCADE, role TEXT NOT NULL, content TEXT NOT NULL,"
    " citations TEXT NOT NULL DEFAULT '[]', created_at TEXT NOT NULL)",
    "CREATE INDEX chat_messages_session ON chat_messages(session_id, id)",
)
TITLE_MAX = 120


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class ChatStore:
    """Sessions and their messages. Takes an open connection to state.db (with a shared
    database, the sessions are there instead: the same SQL, wiki/database.py)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        if isinstance(conn, sqlite3.Connection):
            conn.execute("PRAGMA foreign_keys = ON")  # (PostgreSQL always keeps them)
        self.conn: Any = store_connection(conn, "chat", MIGRATIONS)

    def create(self, title: str = "New chat") -> dict[str, Any]:
        sid = uuid.uuid4().hex[:16]
        now = _now()
        clean = one_line(title)[:TITLE_MAX] or "New chat"
        with self.conn:
            self.conn.execute(
                "INSERT INTO chat_sessions (id, title, created_at, updated_at) VALUES (?, ?, ?, ?)",
                (sid, clean, now, now),
            )
        return {"id": sid, "title": clean, "created_at": now, "updated_at": now}

    def list(self) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT s.id, s.title, s.created_at, s.updated_at,"
            " (SELECT count(*) FROM chat_messages m WHERE m.session_id = s.id) AS messages"
            " FROM chat_sessions s ORDER BY s.updated_at DESC, s.id"
        )
        return [
            dict(zip(("id", "title", "created_at", "updated_at", "messages"), r, strict=True))
            for r in rows
        ]

    def get(self, sid: str) -> dict[str, Any]:
        row = self.conn.execute(
            "SELECT id, title, created_at, updated_at FROM chat_sessions WHERE id = ?", (sid,)
        ).fetchone()
        if row is None:
            raise NotFoundError(f"No chat session {sid!r}")
        messages = [
            {"role": r[0], "content": r[1], "citations": json.loads(r[2]), "created_at": r[3]}
            for r in self.conn.execute(
                "SELECT role, content, citations, created_at FROM chat_messages WHERE session_id = ? ORDER BY id",
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
        return [Turn(m["role"], m["content"]) for m in self.get(sid)["messages"]]

    def append(
        self, sid: str, role: str, content: str, citations: list[dict] | None = None
    ) -> None:
        if role not in ("user", "assistant"):
            raise UsageError(f"unknown role {role!r}")
        self.get(sid)
        now = _now()
        with self.conn:
            self.conn.execute(
                "INSERT INTO chat_messages (session_id, role, content, citations, created_at) VALUES (?, ?, ?, ?, ?)",
                (sid, role, content, json.dumps(citations or [], ensure_ascii=False), now),
            )
            self.conn.execute("UPDATE chat_sessions SET updated_at = ? WHERE id = ?", (now, sid))

    def rename(self, sid: str, title: str) -> dict[str, Any]:
        clean = one_line(title)[:TITLE_MAX]
        if not clean:
            raise UsageError("A session title cannot be empty")
        with self.conn:
            cur = self.conn.execute("UPDATE chat_sessions SET title = ? WHERE id = ?", (clean, sid))
        if cur.rowcount == 0:
            raise NotFoundError(f"No chat session {sid!r}")
        return self.get(sid)

    def delete(self, sid: str) -> None:
        with self.conn:
            self.conn.execute("DELETE FROM chat_messages WHERE session_id = ?", (sid,))
            cur = self.conn.execute("DELETE FROM chat_sessions WHERE id = ?", (sid,))
        if cur.rowcount == 0:
            raise NotFoundError(f"No chat session {sid!r}")
