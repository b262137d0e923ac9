"""The token, host and origin rules, and the headers that keep pages from running script."""

import pytest

from tests.web.conftest import make_client

TOKEN = "s3cret-token-0123456789"


@pytest.fixture
def guarded(settings, model):
    with make_client(settings, model, token=TOKEN, start_worker=False) as c:
        yield c


def test_with_a_token_everything_needs_it(guarded):
    for path in ("/healthz", "/api/tasks", "/wiki", "/static/kb.css", "/mcp"):
        r = guarded.get(path)
        assert r.status_code == 401, path
    assert guarded.get("/api/tasks").json() == {
        "ok": False,
        "status": 401,
        "error": guarded.get("/api/tasks").json()["error"],
    }
    page = guarded.get("/wiki", headers={"accept": "text/html"})
    assert page.status_code == 401 and "<form" in page.text
    assert guarded.get("/api/tasks", headers={"authorization": "Bearer wrong"}).status_code == 401
    assert (
        guarded.get("/api/tasks", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200
    )


def test_a_token_in_the_address_becomes_an_httponly_cookie(guarded):
    r = guarded.get(f"/wiki?token={TOKEN}&x=1", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/wiki?x=1"
    cookie = r.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert guarded.get("/wiki").status_code == 200  # the client kept the cookie
    assert guarded.get("/wiki?token=wrong", follow_redirects=False).status_code in (200, 303)


def test_without_a_token_only_loopback_host_names_are_served(client):
    assert client.get("/healthz").status_code == 200
    r = client.get("/healthz", headers={"host": "attacker.example:8080"})
    assert r.status_code == 403 and r.json()["ok"] is False
    assert client.get("/healthz", headers={"host": "localhost:8080"}).status_code == 200


def test_cross_origin_writes_are_refused(client):
    r = client.post("/api/submit", json={"title": "t", "content": "x"},
                    headers={"origin": "http://evil.example"})  # fmt: skip
    assert r.status_code == 403
    assert client.get("/api/tasks").json()["tasks"] == []
    same = client.post("/api/sessions", json={"title": "t"}, headers={"origin": "http://127.0.0.1"})
    assert same.status_code == 201


def test_pages_forbid_inline_script(client):
    csp = client.get("/wiki").headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert client.get("/api/tasks").headers["x-content-type-options"] == "nosniff"
