"""Who sent a request, and what their role lets them do.

The guard (web/auth.py) finds the visitor from the tokens a request offers: the server's
``KB_AI_TOKEN`` is an admin's, a person's token (``kb-ai users add``) is theirs. A server
with neither a token nor people (loopback only) treats everyone as its one local admin.
Handlers say what they need with :func:`needs`; templates ask :func:`may`, so a page
shows no button its visitor may not use.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections.abc import Awaitable, Callable
from contextlib import closing
from dataclasses import dataclass
from functools import wraps
from typing import Any

from starlette.requests import Request

from kb_ai.errors import KbAiError, UsageError
from retrieval import ChatStore
from web.forwarded import Network, networks, within
from wiki import KnowledgeBase, open_state
from wiki.actors import Actor
from wiki.audit import AuditLog
from wiki.people import PeopleStore, allows, split_token


class ForbiddenError(KbAiError):
    """A signed-in person asked for what their role does not allow (403)."""


@dataclass(frozen=True)
class Visitor:
    """Who sent a request: their role, and the actor they write as (None: the server's
    own, for ``KB_AI_TOKEN`` and a server without people)."""

    role: str
    actor: Actor | None = None
    via: str = ""  # where their token came: bearer (a script's), cookie, query, session
    key: str = ""  # what a session cookie names them by: their token's id, or "admin"

    @property
    def by_bearer(self) -> bool:
        return self.via == "bearer"

    @property
    def name(self) -> str:
        return self.actor.name if self.actor is not None else "admin"


LOCAL = Visitor("admin")  # everyone, on a server with neither a token nor people
ANONYMOUS = Visitor("reader")  # not signed in yet, on the sign-in page of one that has


def visitor(request: Request) -> Visitor:
    return request.scope.get("state", {}).get("visitor", LOCAL)


def chat_store(conn: Any, who: Visitor) -> ChatStore:
    """The chat sessions ``who`` may see: a person's own (an admin's and the sessions no
    person owns); with no person (``KB_AI_TOKEN``, a server without people) the sessions
    no person owns."""
    person = who.actor.name if who.actor is not None and who.actor.kind == "person" else None
    return ChatStore(conn, person, ownerless=allows(who.role, "admin"))


def may(request: Request, role: str) -> bool:
    return allows(visitor(request).role, role)


def require(request: Request, role: str) -> None:
    who = visitor(request)
    if not allows(who.role, role):
        raise ForbiddenError(
            f"{who.name} is a {who.role}: this needs a {role}",
            hint="an admin can change it with kb-ai users role NAME ROLE",
        )


Handler = Callable[[Request], Awaitable[Any]]


def needs(role: str) -> Callable[[Handler], Handler]:
    """A route handler only people with ``role`` (or above) may use; others get 403."""

    def wrap(handler: Handler) -> Handler:
        @wraps(handler)
        async def checked(request: Request) -> Any:
            require(request, role)
            return await handler(request)

        return checked

    return wrap


@dataclass(frozen=True)
class ProxyRule:
    """A sign-on proxy in front of the server: ``header`` names the person, believed
    only from the ``networks`` of the proxies; people kb-ai does not know get
    ``default_role``."""

    header: str
    networks: tuple[Network, ...]
    default_role: str = "reader"

    @classmethod
    def of(cls, header: str | None, proxies: str, default_role: str) -> ProxyRule | None:
        if not header:
            return None
        return cls(header.lower(), networks(proxies), default_role)

    def person(self, address: str, headers: dict[str, str]) -> str | None:
        """The name the proxy sent, if ``address`` (the sender's own, not the one it
        forwards for: web/forwarded.py) is one of the proxies."""
        name = headers.get(self.header, "").strip()
        if not name:
            return None
        return name if within(address, self.networks) else None


class Directory:
    """The people of a knowledge base as the guard sees them. A token checked once is
    remembered by its sha256 (in memory only), so its scrypt hash is not computed on
    every request; whether it is still its holder's current token is asked each time,
    so a revoked token stops working at once."""

    def __init__(
        self, kb: KnowledgeBase, admin_token: str | None, proxy: ProxyRule | None = None
    ) -> None:
        self.kb = kb
        self.proxy = proxy
        self.admin = admin_token.encode() if admin_token else None
        self._checked: dict[bytes, str] = {}
        self._lock = threading.Lock()

    def identify(self, offered: list[tuple[str, str]]) -> tuple[Visitor | None, bool]:
        """The visitor of the first good token of ``offered`` ((where, token) pairs),
        and whether this server requires one at all. Blocking (SQLite, scrypt)."""
        for where, token in offered:
            if self.admin is not None and hmac.compare_digest(token.encode(), self.admin):
                return Visitor("admin", via=where, key="admin"), True
        with closing(open_state(self.kb)) as conn:
            store = PeopleStore(conn)
            for where, token in offered:
                if where == "proxy":  # a person the sign-on proxy vouches for
                    return self._proxied(store, token), True
                if where == "session":  # a signed session cookie, naming its token's id
                    if token == "admin":
                        if self.admin is not None:
                            return Visitor("admin", via=where, key="admin"), True
                        continue
                    person = store.holder(token)
                else:
                    person = self._person(store, token)
                if person is not None:
                    key = token if where == "session" else (split_token(token) or ("",))[0]
                    return Visitor(person.role, person.actor, where, key), True
            required = self.admin is not None or self.proxy is not None
            return None, required or store.count() > 0

    def cheap(self, token: str) -> bool:
        """Whether ``token`` is told good without scrypt: the server's own, or one
        checked before (so a person's script is not held back by another's wrong ones)."""
        if self.admin is not None and hmac.compare_digest(token.encode(), self.admin):
            return True
        with self._lock:
            return hashlib.sha256(token.encode()).digest() in self._checked

    def _proxied(self, store: PeopleStore, name: str) -> Visitor | None:
        assert self.proxy is not None
        person = store.find(name)
        if person is not None:
            return Visitor(person.role, person.actor, "proxy")
        try:
            return Visitor(self.proxy.default_role, Actor("person", name), "proxy")
        except UsageError:  # not a name git could write as an author
            return None

    def _person(self, store: PeopleStore, token: str) -> Any:
        parts = split_token(token)
        if parts is None:
            return None
        digest = hashlib.sha256(token.encode()).digest()
        with self._lock:
            known = self._checked.get(digest)
        if known is not None:
            person = store.holder(known)
            if person is None:  # revoked since
                with self._lock:
                    self._checked.pop(digest, None)
            return person
        person = store.verify(token)
        if person is not None:
            with self._lock:
                self._checked[digest] = parts[0]
        return person

    def record(self, who: str, action: str, detail: str, address: str) -> None:
        """An audit line for what the guard itself sees (sign-ins)."""
        with closing(open_state(self.kb)) as conn:
            AuditLog(conn).record(who, action, "", detail, address)
