"""Which addresses a URL may reach. A server that fetches what users name must not be
turned against its own network: loopback, private, link-local (169.254.169.254, the
cloud metadata service), carrier-grade NAT, multicast and reserved addresses are refused
unless the operator allows them (``fetch_allow`` in kb-ai.toml: host names, addresses or
networks). Checked before connecting, on every address a name resolves to, and again
for every redirect."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kb_ai.errors import DocumentError

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]


def system_resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (the system resolver)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True)
class NetPolicy:
    allow: Sequence[str] = ()
    resolve: Resolver | None = None  # the system resolver when None

    def allowed_host(self, host: str) -> bool:
        return host.lower().rstrip(".") in {a.lower().rstrip(".") for a in self.allow}

    def allowed_address(self, addr: Address) -> bool:
        for entry in self.allow:
            try:
                if addr in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:  # a host name entry
                continue
        return False

    def addresses(self, url: str, host: str, port: int) -> list[str]:
        """The addresses to connect to for ``host``: all of them public, or allowed; a
        DocumentError (cause "refused") before any connection otherwise."""
        try:
            literal: Address | None = ipaddress.ip_address(host.strip("[]"))
        except ValueError:
            literal = None
        if literal is not None:
            found = [str(literal)]
        else:
            try:
                found = (self.resolve or system_resolve)(host, port)
            except (OSError, UnicodeError) as exc:
                raise DocumentError(f"{url}: cannot resolve {host} ({exc})", cause="fetch") from exc
            if not found:
                raise DocumentError(f"{url}: {host} resolves to no address", cause="fetch")
        if self.allowed_host(host):
            return found
        for text in found:
            addr = _unmapped(ipaddress.ip_address(text.split("%")[0]))
            if not _public(addr) and not self.allowed_address(addr):
                what = f"{host} resolves to {addr}" if literal is None else str(addr)
                raise DocumentError(
                    f"{url}: refused: {what} is a {_kind(addr)} address",
                    cause="refused",
                    hint="kb-ai fetches public addresses only; an operator can allow a "
                    "host or network with fetch_allow in kb-ai.toml",
                )
        return found


def _unmapped(addr: Address) -> Address:
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.ipv4_mapped is not None:
            return addr.ipv4_mapped
        if addr.sixtofour is not None:
            return addr.sixtofour
    return addr


def _public(addr: Address) -> bool:
    return addr.is_global and not addr.is_multicast


def _kind(addr: Address) -> str:
    if addr.is_loopback:
        return "loopback"
    if addr.is_link_local:
        return "link-local (cloud metadata)"
    if addr.is_private:
        return "private"
    if addr.is_multicast:
        return "multicast"
    return "non-public"
