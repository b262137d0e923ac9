"""People, roles and the audit log through the application layer: each change to a
person is done as the knowledge base's actor and written to the audit log with the
address it came from ("cli" at the terminal)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing, contextmanager

from kb_ai.service.opened import OpenKb
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


def remove(okb: OpenKb, name: str, address: str = "cli") -> Person:
    with _stores(okb) as (store, log):
        person = store.remove(name)
        log.record(who(okb), "person-remove", person.name, "", address)
    return person


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
