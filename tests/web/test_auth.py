"""The token, host and origin rules, and the headers that keep pages from running script."""

import shutil

import pytest

from tests.web.conftest import NOTE, csrf_token, make_client, wait_for
from web.health import HealthLimits

TOKEN = "s3cret-token-0123456789"


@pytest.fixture
def guarded(settings, model):
    with make_client(settings, model, token=TOKEN, start_worker=False) as c:
        yield c


def test_with_a_token_everything_needs_it(guarded):
    for path in ("/api/tasks", "/wiki", "/static/kb.css", "/mcp"):
        r = guarded.get(path)
        assert r.status_code == 401, path
    body = guarded.get("/api/tasks").json()
    assert body == {  # the one error shape (web/errors.py)
        "ok": False,
        "status": 401,
        "kind": "AuthError",
        "error": body["error"],
        "hint": body["hint"],
    }
    page = guarded.get("/wiki", headers={"accept": "text/html"})
    assert page.status_code == 401 and "<form" in page.text
    assert guarded.get("/api/tasks", headers={"authorization": "Bearer wrong"}).status_code == 401
    assert (
        guarded.get("/api/tasks", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200
    )


def test_a_health_probe_needs_no_token_and_learns_only_the_verdict(settings, model):
    """A load balancer or a container's HEALTHCHECK has no secret: /healthz answers it
    whether the server is healthy and which parts are not, nothing more; the token
    still gets the details, and a wrong token is refused as anywhere."""
    with make_client(settings, model, token=TOKEN, start_worker=False) as guarded:
        probe = guarded.get("/healthz")
        assert probe.status_code == 200 and probe.json() == {"ok": True}
        full = guarded.get("/healthz", headers={"authorization": f"Bearer {TOKEN}"}).json()
        assert full["ok"] is True and set(full["checks"]) >= {"database", "disk"}
        wrong = guarded.get("/healthz", headers={"authorization": "Bearer wrong"})
        assert wrong.status_code == 401
        assert guarded.post("/healthz").status_code in (401, 405)
    free = shutil.disk_usage(settings.kb_dir).free
    limits = HealthLimits(min_free_bytes=free * 2)  # more than this disk has free
    with make_client(settings, model, token=TOKEN, health_limits=limits) as guarded:
        probe = guarded.get("/healthz")
        full = guarded.get("/healthz", headers={"authorization": f"Bearer {TOKEN}"})
    assert probe.status_code == 503
    assert probe.json()["failing"] == ["disk"] and probe.json()["error"] == "unhealthy: disk"
    assert str(settings.kb_dir) not in probe.text  # no path, no counts, no errors
    assert "checks" not in probe.json() and "queue" not in probe.json()
    assert full.status_code == 503 and full.json()["checks"]["disk"]["ok"] is False


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
    own = {"origin": "http://127.0.0.1", "sec-fetch-site": "same-origin"}
    same = client.post("/api/sessions", json={"title": "t"},
                       headers={**own, "x-kb-ai-csrf": csrf_token(client)})  # fmt: skip
    assert same.status_code == 201


# What a page on another site can make a browser send without asking (no preflight).
FOREIGN = [
    {"origin": "null"},  # a form in a sandboxed iframe, a data: URL
    {"origin": "http://evil.example"},
    {"origin": "http://127.0.0.1:9"},  # another server on this machine
    {"sec-fetch-site": "cross-site"},
    {"sec-fetch-site": "same-site"},
    {"cookie": "theme=dark"},  # no Origin at all, but a form body with the browser's cookies
]
UPLOAD = {"files": ("note.md", b"# Planted\n\nWritten by another site.\n", "text/markdown")}


def test_a_page_on_another_site_cannot_submit(client):
    """The issue's reproduction: `curl -H 'Origin: null' -F files=@note.md .../api/submit`
    was accepted and compiled. Nothing a foreign page can send is queued."""
    for headers in FOREIGN:
        r = client.post("/api/submit", files=UPLOAD, headers=headers)
        assert r.status_code == 403, headers
        assert r.json()["ok"] is False and "kb-ai's own pages" in r.json()["error"]
        r = client.post("/submit", files=UPLOAD, data={"csrf": "guessed"}, headers=headers)
        assert r.status_code == 403, headers
    assert client.get("/api/tasks").json()["tasks"] == []


def test_every_write_needs_our_pages_or_a_script(client):
    """Each route that changes something, asked by a foreign page: refused, and nothing
    changed. A new route that writes must join this list (the first assertion)."""
    task = client.post("/api/submit", json=NOTE).json()["tasks"][0]
    wait_for(client, task["id"])
    sid = client.post("/api/sessions", json={"title": "Kept"}).json()["session"]["id"]
    writes = [
        ("POST", "/api/submit"), ("DELETE", f"/api/tasks/{task['id']}"),
        ("POST", f"/api/tasks/{task['id']}/retry"), ("POST", "/api/ask"),
        ("POST", "/api/sessions"), ("PATCH", f"/api/sessions/{sid}"),
        ("DELETE", f"/api/sessions/{sid}"), ("POST", "/submit"),
        ("POST", f"/status/{task['id']}/delete"), ("POST", f"/status/{task['id']}/retry"),
        ("POST", f"/chat/{sid}/rename"), ("POST", f"/chat/{sid}/delete"),
        ("POST", "/remove/raw/x.md"), ("POST", "/review/1/approve"),
        ("POST", "/review/1/reject"), ("POST", "/edit/concept/nightly-backups.md"),
        ("POST", "/login"), ("POST", "/learned/x/approve"), ("POST", "/learned/x/reject"),
    ]  # fmt: skip
    unsafe = {
        route.path
        for route in client.app.routes
        if getattr(route, "methods", None) and set(route.methods) - {"GET", "HEAD", "OPTIONS"}
    }
    listed = {p.replace(task["id"], "{task_id}").replace(sid, "{session_id}") for _, p in writes}
    listed |= {"/status/{task_id}/{action}", "/chat/{session_id}/{action}"}
    listed |= {"/remove/{path:path}", "/review/{run}/{action}", "/edit/{path:path}"}
    listed |= {"/learned/{lesson}/{action}"}
    assert unsafe <= listed, unsafe - listed
    for method, path in writes:
        for headers in FOREIGN[:4]:
            r = client.request(method, path, headers=headers, data={"title": "Gone"})
            assert r.status_code == 403, (method, path, headers)
    assert client.get(f"/api/tasks/{task['id']}").json()["task"]["state"] == "done"
    assert client.get(f"/api/sessions/{sid}").json()["session"]["title"] == "Kept"
    assert len(client.get("/api/sessions").json()["sessions"]) == 1


def test_page_forms_need_the_token_the_page_carries(client):
    """Even without an Origin (an old browser), a form post needs the page's token."""
    sid = client.post("/api/sessions", json={"title": "Kept"}).json()["session"]["id"]
    for data in ({}, {"csrf": "guessed"}):
        r = client.post(f"/chat/{sid}/delete", data=data, headers={"accept": "text/html"})
        assert r.status_code == 403 and "reload the page" in r.text
    assert client.get(f"/api/sessions/{sid}").status_code == 200
    page = client.get(f"/chat/{sid}").text
    assert f'name="csrf" value="{csrf_token(client)}"' in page
    r = client.post(f"/chat/{sid}/delete", data={"csrf": csrf_token(client)},
                    headers={"origin": "http://127.0.0.1"}, follow_redirects=False)  # fmt: skip
    assert r.status_code == 303 and client.get(f"/api/sessions/{sid}").status_code == 404


def test_the_api_from_our_own_pages_needs_the_token_header(client):
    own = {"origin": "http://127.0.0.1", "sec-fetch-site": "same-origin"}
    r = client.post("/api/submit", files=UPLOAD, headers=own)
    assert r.status_code == 403 and "CSRF" in r.json()["error"]
    r = client.post("/api/submit", files=UPLOAD,
                    headers={**own, "x-kb-ai-csrf": csrf_token(client)})  # fmt: skip
    assert r.status_code == 202


def test_scripts_keep_working(client, settings, model):
    """curl and the CLI send no Origin: JSON and multipart both pass; with a token set,
    the bearer header is the proof, whatever else the request carries."""
    assert client.post("/api/submit", json=NOTE).status_code == 202
    assert client.post("/api/submit", files=UPLOAD).status_code == 202
    with make_client(settings, model, token=TOKEN, start_worker=False) as guarded:
        bearer = {"authorization": f"Bearer {TOKEN}"}
        assert guarded.post("/api/sessions", json={"title": "t"}, headers=bearer).status_code == 201
        r = guarded.post("/api/sessions", json={"title": "t"}, headers={**bearer, "origin": "null"})
        assert r.status_code == 201
        guarded.get(f"/wiki?token={TOKEN}")  # a browser: the cookie, not the header
        r = guarded.post("/api/sessions", json={"title": "t"}, headers={"origin": "null"})
        assert r.status_code == 403


def test_pages_forbid_inline_script(client):
    csp = client.get("/wiki").headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert client.get("/api/tasks").headers["x-content-type-options"] == "nosniff"
