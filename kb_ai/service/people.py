"""People, roles and the audit log through the application layer: each change to a
person is done as the knowledge base's actor and written to the audit log with the
address it came from ("cli" at the terminal)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass

from kb_ai.service.opened import OpenKb
from retrieval import delete_sessions_of
from wiki import open_state
from wiki.audit import AuditEntry, AuditLog
from wiki.people import PeopleStore, Person


@contextmanager
def _stores(okb: OpenKb) -> Iterator[tuple[PeopleStore, AuditLog]]:
    with closing(open_state(okb.kb)) as conn:
        yield PeopleStore(conn), AuditLog(conn)


def who(okb: OpenKb) -> str:
    """The actor as the audit log names them: a person by name, others with their kind."""
    actor = okb.actor
    return actor.name if actor.kind == "person" else f"{actor.name} ({actor.kind})"


def audit(
    okb: OpenKb, action: str, target: str = "", detail: str = "", address: str = "cli"
) -> AuditEntry:
    with _stores(okb) as (_, log):
        return log.record(who(okb), action, target, detail, address)


def entries(okb: OpenKb, since: str | None = None) -> list[AuditEntry]:
    with _stores(okb) as (_, log):
        return log.entries(since)


def people(okb: OpenKb) -> list[Person]:
    with _stores(okb) as (store, _):
        return store.list()


def add(
    okb: OpenKb, name: str, role: str, email: str | None = None, address: str = "cli"
) -> tuple[Person, str]:
    """A new person and their token (shown once: only its hash is kept)."""
    with _stores(okb) as (store, log):
        person, token = store.add(name, role, email)
        log.record(who(okb), "person-add", person.name, f"role {role}", address)
    return person, token


@dataclass(frozen=True)
class Removed:
    """A person removed, and how many chat sessions of theirs went with them."""

    person: Person
    chats: int


def remove(okb: OpenKb, name: str, address: str = "cli") -> Removed:
    """Remove a person and their chat sessions. The sessions go rather than stay
    ownerless: their questions were theirs alone (no one else, an admin neither, could
    open them), and ownerless they would be open to admins and the server's token; kept
    under the name, to whoever is given that name next. The sessions are deleted first,
    so a failure between the two leaves the person, to remove again."""
    with closing(open_state(okb.kb)) as conn:
        store, log = PeopleStore(conn), AuditLog(conn)
        store.get(name)  # an unknown name: nothing is deleted
        chats = delete_sessions_of(conn, name)
        person = store.remove(name)
        detail = f"{chats} chat session(s) deleted"
        log.record(who(okb), "person-remove", person.name, detail, address)
    return Removed(person, chats)


def new_token(okb: OpenKb, name: str, address: str = "cli") -> str:
    with _stores(okb) as (store, log):
        token = store.new_token(name)
        log.record(who(okb), "token-change", name, "old token revoked", address)
    return token


def set_role(okb: OpenKb, name: str, role: str, address: str = "cli") -> Person:
    with _stores(okb) as (store, log):
        before = store.get(name).role
        person = store.set_role(name, role)
        log.record(who(okb), "role-change", name, f"{before} -> {role}", address)
    return person
