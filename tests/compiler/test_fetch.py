"""Fetching URLs for compile: a web server of the test's own on loopback (allowed in the
test's settings), and the refusals of addresses a server must not reach, decided before
any connection (nothing here sends traffic anywhere but loopback)."""

import asyncio
import dataclasses
import ipaddress
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from compiler import Compiler
from compiler.documents import FetchPolicy, fetch_url
from compiler.documents.netguard import NetPolicy
from kb_ai.errors import DocumentError
from tests.conftest import shared_data, skip_without_shared_data
from wiki import read_raw

PDF = shared_data("documents", "test.pdf")
PAGE = b"""<html><head><title>ADR 7: Queue retries</title></head><body>
<nav><a href="/">Home</a> | <a href="/about">About</a> | Cookie settings</nav>
<article><h1>ADR 7: Queue retries</h1>
<p>We retry failed queue jobs three times with exponential backoff starting at 30 seconds.
After the third failure the job moves to the dead-letter queue, where the on-call engineer
reviews it within one working day.</p>
<p>Decided by the platform team in March 2024 after the billing incident.</p></article>
<footer>Copyright 2024. Accept all cookies.</footer></body></html>"""


class Site(BaseHTTPRequestHandler):
    routes: dict = {}
    seen: list = []

    def do_GET(self):  # noqa: N802
        self.seen.append(self.path)
        status, headers, body = self.routes.get(self.path, (404, {}, b"not here"))
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def site():
    Site.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Site)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    Site.routes = {
        "/adr/0007.html": (200, {"Content-Type": "text/html; charset=utf-8"}, PAGE),
        "/moved": (302, {"Location": "/adr/0007.html"}, b""),
        "/to-metadata": (302, {"Location": "http://169.254.169.254/latest/meta-data/"}, b""),
        "/to-private": (302, {"Location": "http://10.0.0.8/admin"}, b""),
        "/loop": (302, {"Location": "/loop"}, b""),
        "/big.html": (200, {"Content-Type": "text/html"}, b"<p>" + b"x" * 200_000 + b"</p>"),
    }
    if PDF.is_file():  # a document behind a URL (only the test that fetches it needs it)
        Site.routes["/report"] = (200, {"Content-Type": "application/pdf"}, PDF.read_bytes())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield base
    server.shutdown()
    server.server_close()


@pytest.fixture
def connections(monkeypatch):
    """Every address a socket connects to; a non-loopback one fails the test at once."""
    made = []
    real = socket.socket.connect

    def connect(self, address):
        host = address[0]
        made.append(host)
        assert ipaddress.ip_address(host).is_loopback, f"traffic to {host}"
        return real(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    return made


LOOPBACK_OK = FetchPolicy(net=NetPolicy(allow=("127.0.0.1",)))


def test_a_page_is_fetched_through_redirects(site, connections):
    got = fetch_url(f"{site}/moved", LOOPBACK_OK)
    assert got.url.endswith("/adr/0007.html") and got.filename == "0007.html"
    assert b"dead-letter queue" in got.data


@pytest.mark.parametrize(
    "url, says",
    [
        ("http://127.0.0.1:9/x", "127.0.0.1 is a loopback address"),
        ("http://10.20.30.40/wiki", "10.20.30.40 is a private address"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local"),
        ("http://[::1]/", "::1 is a loopback address"),
        ("http://[::ffff:10.0.0.1]/", "10.0.0.1 is a private address"),
    ],
)
def test_non_public_addresses_are_refused_before_connecting(url, says, connections):
    with pytest.raises(DocumentError) as info:
        fetch_url(url, FetchPolicy())
    assert info.value.cause == "refused" and says in str(info.value)
    assert connections == []


def test_a_name_resolving_to_a_private_address_is_refused(monkeypatch, connections):
    def resolve(host, port, *args, **kwargs):
        assert host == "wiki.corp.example"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.1.2.3", port))]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    with pytest.raises(DocumentError) as info:
        fetch_url("https://wiki.corp.example/page", FetchPolicy())
    assert "wiki.corp.example resolves to 10.1.2.3" in str(info.value)
    assert connections == []


@pytest.mark.parametrize(
    "path, target", [("/to-metadata", "169.254.169.254"), ("/to-private", "10.0.0.8")]
)
def test_a_redirect_to_a_non_public_address_is_refused(site, path, target, connections):
    with pytest.raises(DocumentError) as info:
        fetch_url(f"{site}{path}", LOOPBACK_OK)
    assert info.value.cause == "refused" and target in str(info.value)
    assert set(connections) == {"127.0.0.1"}  # only the test's own server was reached


def test_redirects_and_size_are_bounded(site, connections):
    with pytest.raises(DocumentError, match="more than 5 redirects"):
        fetch_url(f"{site}/loop", LOOPBACK_OK)
    small = dataclasses.replace(LOOPBACK_OK, max_bytes=100_000)
    with pytest.raises(DocumentError, match="larger than the 100,000-byte limit"):
        fetch_url(f"{site}/big.html", small)


def test_compile_url_keeps_the_main_content_and_refuses_without_the_setting(
    kb, settings, fake_llm, site, connections
):
    skip_without_shared_data(PDF)
    allowed = dataclasses.replace(settings, fetch_allow=("127.0.0.1",))
    compiler = Compiler(kb, allowed, llm_factory=lambda s, **k: fake_llm)
    urls = [f"{site}/adr/0007.html", f"{site}/report"]
    result = asyncio.run(compiler.compile_paths(urls))
    assert result.compiled == urls, result.failed
    raws = {read_raw(kb, f"raw/{p.name}").origin: read_raw(kb, f"raw/{p.name}")
            for p in (kb.root / "raw").glob("*.md")}  # fmt: skip
    page = raws[urls[0]]
    assert page.title == "ADR 7: Queue retries"
    assert "dead-letter queue" in page.text and "Accept all cookies" not in page.text
    assert "<!-- page 1 -->" in raws[urls[1]].text  # a PDF behind a URL, converted like a file

    # again: fetched again, unchanged, so no model call
    calls = len(fake_llm.calls)
    again = asyncio.run(
        Compiler(kb, allowed, llm_factory=lambda s, **k: fake_llm).compile_paths(urls)
    )
    assert again.skipped == urls and len(fake_llm.calls) == calls
    assert Site.seen.count("/adr/0007.html") == 2

    # the same URL with the default settings: refused, nothing fetched
    Site.seen.clear()
    strict = Compiler(kb, settings, llm_factory=lambda s, **k: fake_llm)
    refused = asyncio.run(strict.compile_paths([urls[0]], force=True))
    assert "loopback address" in refused.failed[0].error and Site.seen == []
