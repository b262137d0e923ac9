"""Fetching a URL for compile: a size cap, a timeout over the whole fetch, redirects
followed a bounded number of times, and every hop's address checked (netguard) and
pinned: the connection goes to the address that was checked, so a name that resolves
differently a moment later (DNS rebinding) cannot slip through."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from urllib.parse import urljoin, urlsplit, urlunsplit

from compiler.documents.formats import DOCUMENT_EXTENSIONS
from compiler.documents.netguard import NetPolicy
from kb_ai.errors import DocumentError

USER_AGENT = "kb-ai (knowledge base compiler)"
# Content types and the extension the converters know them by.
TYPES = {
    "text/html": ".html",
    "application/xhtml+xml": ".html",
    "application/pdf": ".pdf",
    "text/plain": ".txt",
    "text/markdown": ".md",
    "text/csv": ".csv",
    "application/rss+xml": ".rss",
    "application/atom+xml": ".atom",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
    "application/epub+zip": ".epub",
}
TEXT_SUFFIXES = (".md", ".txt", ".markdown", ".rst")


@dataclass(frozen=True)
class FetchPolicy:
    timeout: float = 20.0
    max_bytes: int = 50_000_000
    max_redirects: int = 5
    net: NetPolicy = field(default_factory=NetPolicy)


@dataclass(frozen=True)
class Fetched:
    url: str  # where it was found, after redirects
    data: bytes
    filename: str  # a name whose extension says how to convert it


def fetch_policy(settings) -> FetchPolicy:  # noqa: ANN001 - kb_ai.settings.Settings
    """The fetch limits and the address policy of a knowledge base's settings."""
    return FetchPolicy(
        timeout=settings.fetch_timeout,
        max_bytes=settings.max_document_bytes,
        max_redirects=settings.fetch_max_redirects,
        net=NetPolicy(allow=tuple(settings.fetch_allow)),
    )


def is_url(text: str) -> bool:
    return text.lower().startswith(("http://", "https://"))


def fetch_url(url: str, policy: FetchPolicy) -> Fetched:
    import httpx

    deadline = time.monotonic() + policy.timeout
    current = url
    with httpx.Client(timeout=policy.timeout, follow_redirects=False, trust_env=False) as client:
        for _ in range(policy.max_redirects + 1):
            parts = urlsplit(current)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise DocumentError(f"{url}: only http and https URLs are fetched", cause="refused")
            port = parts.port or (443 if parts.scheme == "https" else 80)
            addresses = policy.net.addresses(current, parts.hostname, port)
            pinned = _pin(parts, addresses[0])
            headers = {"Host": parts.netloc.rsplit("@", 1)[-1], "User-Agent": USER_AGENT}
            extensions = {"sni_hostname": parts.hostname} if parts.scheme == "https" else {}
            try:
                with client.stream("GET", pinned, headers=headers, extensions=extensions) as resp:
                    if resp.is_redirect:
                        location = resp.headers.get("location", "")
                        if not location:
                            raise DocumentError(
                                f"{url}: a redirect without a target", cause="fetch"
                            )
                        current = urljoin(current, location)
                        continue
                    if resp.status_code >= 400:
                        raise DocumentError(
                            f"{url}: the server answered {resp.status_code}", cause="fetch"
                        )
                    data = _read(resp, url, policy, deadline)
                    return Fetched(current, data, _filename(current, resp.headers))
            except httpx.TimeoutException as exc:
                raise DocumentError(
                    f"{url}: no answer within {policy.timeout:g} s", cause="fetch"
                ) from exc
            except httpx.HTTPError as exc:
                raise DocumentError(f"{url}: cannot fetch it ({exc})", cause="fetch") from exc
    raise DocumentError(
        f"{url}: more than {policy.max_redirects} redirects",
        cause="fetch",
        hint="give the final URL",
    )


def _pin(parts, address: str) -> str:  # noqa: ANN001 - a SplitResult
    host = f"[{address}]" if ":" in address else address
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))


def _read(resp, url: str, policy: FetchPolicy, deadline: float) -> bytes:  # noqa: ANN001
    declared = resp.headers.get("content-length", "")
    too_large = DocumentError(
        f"{url}: larger than the {policy.max_bytes:,}-byte limit",
        cause="too_large",
        hint="raise max_document_bytes in kb-ai.toml",
    )
    if declared.isdigit() and int(declared) > policy.max_bytes:
        raise too_large
    chunks, size = [], 0
    for chunk in resp.iter_bytes():
        size += len(chunk)
        if size > policy.max_bytes:
            raise too_large
        if time.monotonic() > deadline:
            raise DocumentError(f"{url}: not fetched within {policy.timeout:g} s", cause="fetch")
        chunks.append(chunk)
    return b"".join(chunks)


def _filename(url: str, headers) -> str:  # noqa: ANN001
    path = PurePosixPath(urlsplit(url).path or "/")
    stem = path.stem or urlsplit(url).hostname or "page"
    suffix = path.suffix.lower()
    ctype = headers.get("content-type", "").split(";")[0].strip().lower()
    by_type = TYPES.get(ctype)
    if by_type:
        return f"{stem}{by_type}"
    if suffix in DOCUMENT_EXTENSIONS or suffix in TEXT_SUFFIXES:
        return f"{stem}{suffix}"
    raise DocumentError(
        f"{url}: kb-ai does not know this content type ({ctype or 'none given'})",
        cause="unsupported",
    )
