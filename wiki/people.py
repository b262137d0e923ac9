"""People who may use a served knowledge base, their roles and their tokens.

Roles are ordered, each allowing what the one before it does and more:

- reader: browse the wiki, ask questions;
- contributor: also submit, upload and edit;
- reviewer: also approve or reject held runs and edits;
- admin: also people, removal and settings.

A person has one token at a time, ``kb_<id>.<secret>``: the id finds the person, the
secret is kept only as an scrypt hash with a salt of its own. A new token revokes the
old one. The store lives in state.db (its own ``people`` tables, migrated under that
name); :class:`PeopleStore` is all the rest of kb-ai sees of it, so another database can
stand behind the same methods: with ``database_url``, PostgreSQL (wiki/database.py), so
every server knows the same people, roles and tokens.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kb_ai.errors import NotFoundError, UsageError
from wiki.actors import Actor
from wiki.database import store_connection

ROLES: tuple[str, ...] = ("reader", "contributor", "reviewer", "admin")

PEOPLE_MIGRATIONS = (
    """CREATE TABLE people (
        name TEXT PRIMARY KEY,
        role TEXT NOT NULL,
        email TEXT,
        created_at TEXT NOT NULL,
        token_id TEXT UNIQUE,  -- the public part of the person's token
        token_salt BLOB,
        token_hash BLOB,  -- scrypt of the secret part; the token itself is never kept
        token_at TEXT
    )""",
)

# scrypt's cost: about 16 MiB and tens of milliseconds a check (the web guard keeps
# what it has checked for the life of the token, see web/people.py).
_SCRYPT = {"n": 2**14, "r": 8, "p": 1, "maxmem": 64 * 1024 * 1024, "dklen": 32}
PREFIX = "kb_"


def check_role(role: str) -> str:
    if role not in ROLES:
        raise UsageError(f"{role!r} is not a role", hint=f"one of {', '.join(ROLES)}")
    return role


def allows(role: str, needed: str) -> bool:
    """Whether ``role`` may do what ``needed`` may."""
    return ROLES.index(role) >= ROLES.index(needed)


@dataclass(frozen=True)
class Person:
    name: str
    role: str
    email: str | None = None
    created_at: str = ""
    token_at: str | None = None

    @property
    def actor(self) -> Actor:
        """The person as the author of what they write."""
        return Actor("person", self.name, self.email)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "role": self.role,
            "email": self.email,
            "created_at": self.created_at,
            "token_at": self.token_at,
        }


def hash_secret(secret: str, salt: bytes) -> bytes:
    return hashlib.scrypt(secret.encode(), salt=salt, **_SCRYPT)


def split_token(token: str) -> tuple[str, str] | None:
    """(id, secret) of a token in kb-ai's form, else None."""
    if not token.startswith(PREFIX):
        return None
    token_id, dot, secret = token[len(PREFIX) :].partition(".")
    return (token_id, secret) if dot and token_id and secret else None


class PeopleStore:
    """The people of one knowledge base, over a state.db connection (the caller's)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn: Any = store_connection(conn, "people", PEOPLE_MIGRATIONS)

    def add(self, name: str, role: str, email: str | None = None) -> tuple[Person, str]:
        """A new person and their token (returned once; only its hash is kept)."""
        name = name.strip()
        Actor("person", name, email)  # the same rules for a name as git's authors
        check_role(role)
        if self._row(name) is not None:
            raise UsageError(
                f"{name!r} is already a person here",
                hint=f"kb-ai users token {name!r} gives them a new token",
            )
        with self.conn:
            self.conn.execute(
                "INSERT INTO people (name, role, email, created_at) VALUES (?, ?, ?, ?)",
                (name, role, email, _now()),
            )
        token = self.new_token(name)
        return self.get(name), token

    def new_token(self, name: str) -> str:
        """A new token for ``name``; the old one stops working at once."""
        self.get(name)
        token_id, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
        salt = secrets.token_bytes(16)
        with self.conn:
            self.conn.execute(
                "UPDATE people SET token_id = ?, token_salt = ?, token_hash = ?, token_at = ?"
                " WHERE name = ?",
                (token_id, salt, hash_secret(secret, salt), _now(), name),
            )
        return f"{PREFIX}{token_id}.{secret}"

    def set_role(self, name: str, role: str) -> Person:
        self.get(name)
        with self.conn:
            self.conn.execute("UPDATE people SET role = ? WHERE name = ?", (check_role(role), name))
        return self.get(name)

    def remove(self, name: str) -> Person:
        person = self.get(name)
        with self.conn:
            self.conn.execute("DELETE FROM people WHERE name = ?", (name,))
        return person

    def get(self, name: str) -> Person:
        row = self._row(name)
        if row is None:
            raise NotFoundError(f"No person named {name!r}", hint="kb-ai users list shows them")
        return _person(row)

    def find(self, name: str) -> Person | None:
        row = self._row(name)
        return _person(row) if row is not None else None

    def list(self) -> list[Person]:
        return [_person(r) for r in self.conn.execute("SELECT * FROM people ORDER BY name")]

    def count(self) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM people").fetchone()[0]

    def verify(self, token: str) -> Person | None:
        """The person whose current token ``token`` is, else None (wrong or revoked)."""
        parts = split_token(token)
        if parts is None:
            return None
        row = self.conn.execute("SELECT * FROM people WHERE token_id = ?", (parts[0],)).fetchone()
        if row is None or not hmac.compare_digest(
            hash_secret(parts[1], bytes(row["token_salt"])), bytes(row["token_hash"])
        ):
            return None
        return _person(row)

    def holder(self, token_id: str) -> Person | None:
        """Who holds the token with this id now (None once it is revoked): a check
        without the hash, for tokens already verified."""
        row = self.conn.execute("SELECT * FROM people WHERE token_id = ?", (token_id,)).fetchone()
        return _person(row) if row is not None else None

    def _row(self, name: str) -> sqlite3.Row | None:
        return self.conn.execute("SELECT * FROM people WHERE name = ?", (name,)).fetchone()


def _person(row: sqlite3.Row) -> Person:
    return Person(row["name"], row["role"], row["email"], row["created_at"], row["token_at"])


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
