"""Requests that come through a reverse proxy (TLS, a company's sign-on proxy): what
kb-ai believes of the headers it forwards.

Only from the addresses in ``trusted_proxies`` (unset: loopback, a proxy on this host):

- ``X-Forwarded-For`` gives the address kb-ai audits and slows failed sign-ins by (the
  right-most address in it that is not a trusted proxy), not the proxy's own, which
  every person behind it would share;
- ``X-Forwarded-Proto: https`` makes the page https, so session cookies are Secure.

The proxy's own address is kept in the scope (:func:`peer`): the guard believes the
sign-on proxy's user header (``trusted_user_header``) from it alone (web/people.py).
From anyone else these headers are ignored. `kb-ai serve` runs uvicorn without its
own proxy-header handling, so this is the one rule.
"""

from __future__ import annotations

import ipaddress

from starlette.types import ASGIApp, Receive, Scope, Send

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
LOOPBACK: tuple[Network, ...] = (
    ipaddress.ip_network("127.0.0.0/8"),
    ipaddress.ip_network("::1/128"),
)


def networks(proxies: str) -> tuple[Network, ...]:
    """The networks of a ``trusted_proxies`` value ("10.0.0.5, 172.16.0.0/12")."""
    return tuple(
        ipaddress.ip_network(p.strip(), strict=False) for p in proxies.split(",") if p.strip()
    )


def within(address: str, nets: tuple[Network, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address.strip().strip("[]"))
    except ValueError:
        return False
    return any(ip in net for net in nets)


def peer(scope: Scope) -> str:
    """The address that sent the request itself (a proxy's, when one forwarded it)."""
    return scope.get("state", {}).get("peer") or (scope.get("client") or ("",))[0]


class ForwardedMiddleware:
    """Takes the client's address and scheme from a trusted proxy's headers."""

    def __init__(self, app: ASGIApp, *, proxies: tuple[Network, ...] = LOOPBACK) -> None:
        self.app = app
        self.proxies = proxies or LOOPBACK

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            sender = (scope.get("client") or ("",))[0]
            if within(sender, self.proxies):
                scope = self._forwarded(scope, sender)
        await self.app(scope, receive, send)

    def _forwarded(self, scope: Scope, sender: str) -> Scope:
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        scope = {**scope, "state": {**scope.get("state", {}), "peer": sender}}
        hops = [h.strip() for h in headers.get("x-forwarded-for", "").split(",") if h.strip()]
        client = next((h for h in reversed(hops) if not within(h, self.proxies)), None)
        if client is None and hops:  # every hop is a proxy of ours: the first is the client
            client = hops[0]
        if client is not None:
            scope["client"] = (client, 0)
        proto = headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
        if proto in ("http", "https"):
            scope["scheme"] = proto
        return scope
