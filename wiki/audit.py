"""The audit log: who did what, when, from which address. Append-only: state.db refuses
to change or delete a line (triggers), so an entry stays as it was written; with a shared
database (``database_url``) the log is there, refusing the same (a trigger of its own).

Actions: sign-in, sign-in-failed, submit, edit, remove, approve, reject, person-add,
person-remove, role-change, token-change. Nothing secret is ever passed in: a token is
named by its holder, never written.
"""

from __future__ import annotations

import sqlite3
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from kb_ai.errors import UsageError
from wiki.database import store_connection

AUDIT_MIGRATIONS = (
    """CREATE TABLE audit (
        id INTEGER PRIMARY KEY,
        at TEXT NOT NULL,
        who TEXT NOT NULL,
        action TEXT NOT NULL,
        target TEXT NOT NULL DEFAULT '',
        detail TEXT NOT NULL DEFAULT '',
        address TEXT NOT NULL DEFAULT ''
    )""",
    """CREATE TRIGGER audit_kept_as_written BEFORE UPDATE ON audit
       BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END""",
    """CREATE TRIGGER audit_never_deleted BEFORE DELETE ON audit
       BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END""",
    "CREATE INDEX audit_at ON audit (at)",
)
# The same log in PostgreSQL: its triggers are written in PL/pgSQL, and TRUNCATE is
# refused too.
AUDIT_SHARED_MIGRATIONS = (
    AUDIT_MIGRATIONS[0],
    """CREATE FUNCTION kb_ai_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN RAISE EXCEPTION 'the audit log is append-only'; END $$""",
    """CREATE TRIGGER audit_kept_as_written BEFORE UPDATE OR DELETE ON audit
       FOR EACH ROW EXECUTE FUNCTION kb_ai_audit_append_only()""",
    """CREATE TRIGGER audit_never_truncated BEFORE TRUNCATE ON audit
       FOR EACH STATEMENT EXECUTE FUNCTION kb_ai_audit_append_only()""",
    AUDIT_MIGRATIONS[3],
)


@dataclass(frozen=True)
class AuditEntry:
    at: str
    who: str
    action: str
    target: str = ""
    detail: str = ""
    address: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def line(self) -> str:
        where = f" from {self.address}" if self.address else ""
        what = f" {self.target}" if self.target else ""
        more = f" ({self.detail})" if self.detail else ""
        return f"{self.at}  {self.who}  {self.action}{what}{more}{where}"


class AuditLog:
    """The audit log of one knowledge base, over a state.db connection (the caller's)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn: Any = store_connection(conn, "audit", AUDIT_MIGRATIONS, AUDIT_SHARED_MIGRATIONS)

    def record(
        self, who: str, action: str, target: str = "", detail: str = "", address: str = ""
    ) -> AuditEntry:
        entry = AuditEntry(_now(), who, action, target, detail, address)
        with self.conn:
            self.conn.execute(
                "INSERT INTO audit (at, who, action, target, detail, address)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (entry.at, who, action, target, detail, address),
            )
        return entry

    def entries(self, since: str | None = None) -> list[AuditEntry]:
        """Every entry, oldest first; ``since``: those at or after an ISO time or date."""
        rows = self.conn.execute(
            "SELECT at, who, action, target, detail, address FROM audit WHERE at >= ? ORDER BY id",
            (_utc(since) if since else "",),
        )
        return [AuditEntry(*row) for row in rows]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _utc(since: str) -> str:
    """``since`` (an ISO date, or a time, UTC unless it says otherwise) as the entries'
    times are written, so that the two compare as text."""
    try:
        when = datetime.fromisoformat(since.strip())
    except ValueError:
        raise UsageError(
            f"{since!r} is not a date or time",
            hint="an ISO date or time, e.g. 2026-12-01 or 2026-12-01T09:30 (UTC unless it "
            "says otherwise, as in 2026-12-01T09:30+02:00)",
        ) from None
    if when.tzinfo is not None:
        when = when.astimezone(UTC).replace(tzinfo=None)
    return when.isoformat(timespec="seconds")
