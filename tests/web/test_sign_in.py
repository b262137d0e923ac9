"""Signing in on the login page: a signed, expiring, HttpOnly session cookie that never
holds the token, ended by revoking the token; failed sign-ins wait, per address."""

import pytest

from kb_ai.service import open_kb, people
from tests.web.conftest import make_client
from web.sessions import COOKIE, Sessions


@pytest.fixture
def ada(settings):
    return people.add(open_kb(settings=settings), "Ada", "contributor")[1]


def sign_in(client, token):
    return client.post(
        "/login", data={"csrf": csrf_token_of_login(client), "token": token}, follow_redirects=False
    )


def csrf_token_of_login(client):
    page = client.get("/login").text
    return page.split('name="kb-ai-csrf" content="')[1].split('"')[0]


def test_the_login_page_sets_a_signed_session_cookie_without_the_token(settings, model, ada):
    with make_client(settings, model, start_worker=False) as client:
        assert client.get("/wiki").status_code == 401
        assert client.get("/login").status_code == 200  # open to all
        signed = sign_in(client, ada)
        assert signed.status_code == 303
        cookie = signed.headers["set-cookie"]
        assert cookie.startswith(f"{COOKIE}=") and ada not in cookie
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Max-Age=" in cookie
        assert "Secure" not in cookie  # plain http here; https adds it
        page = client.get("/status")
        assert page.status_code == 200 and "Ada (contributor)" in page.text

        people.new_token(open_kb(settings=settings), "Ada")  # revoking ends the session
        assert client.get("/status").status_code == 401


def test_a_forged_or_expired_session_is_refused(settings, model, ada):
    with make_client(settings, model, start_worker=False) as client:
        sessions = client.app.state.sessions
        holder = sessions.holder(sign_in(client, ada).cookies[COOKIE])
        client.cookies.clear()
        expired = sessions.issue(holder, now=0)
        forged = Sessions("another secret").issue(holder)
        for value in (expired, forged, f"{holder}.9999999999.00"):
            client.cookies.set(COOKIE, value)
            assert client.get("/api/tasks").status_code == 401
            page = client.get("/wiki", headers={"accept": "text/html"})
            assert page.status_code == 401 and value not in page.text  # nor in error pages
            client.cookies.clear()


def test_failed_sign_ins_wait_per_address_and_are_audited(settings, model, ada):
    with make_client(settings, model, start_worker=False) as client:
        assert sign_in(client, "kb_guess.wrong").status_code == 401
        again = sign_in(client, ada)  # even the right token waits its turn
        assert again.status_code == 429 and int(again.headers["retry-after"]) >= 1
        link = client.get(f"/wiki?token={ada}", headers={"accept": "application/json"})
        assert link.status_code == 429 and link.json()["kind"] == "TooManyError"
        assert client.app.state.throttle.wait("another-address") == 0
    entries = people.entries(open_kb(settings=settings))
    assert [e.action for e in entries if "sign-in" in e.action] == ["sign-in-failed"]
    assert all(ada not in e.line for e in entries)


def test_the_login_form_needs_its_csrf_field(settings, model, ada):
    with make_client(settings, model, start_worker=False) as client:
        refused = client.post("/login", data={"token": ada}, follow_redirects=False)
        assert refused.status_code == 403 and COOKIE not in refused.headers.get("set-cookie", "")


def test_the_401_page_signs_in_by_post_and_comes_back_to_the_page(settings, model, ada):
    """A browser sent to a page without a session gets a sign-in form that posts the token
    (an address with the token in it stays in proxies' logs and the history), then the
    page it asked for; never another site."""
    html = {"accept": "text/html"}
    with make_client(settings, model, start_worker=False) as client:
        page = client.get("/status?view=runs", headers=html)
        assert page.status_code == 401
        form = page.text.split("<form")[1].split("</form>")[0]
        assert 'method="post" action="/login"' in form and 'name="next"' in form
        assert 'value="/status?view=runs"' in form
        csrf = form.split('name="csrf" value="')[1].split('"')[0]
        signed = client.post(
            "/login",
            data={"csrf": csrf, "token": ada, "next": "/status?view=runs"},
            follow_redirects=False,
        )
        assert signed.status_code == 303 and signed.headers["location"] == "/status?view=runs"
        for elsewhere in ("//evil.example/x", "https://evil.example/", "/\\evil.example"):
            client.cookies.clear()
            away = client.post(
                "/login", data={"csrf": csrf, "token": ada, "next": elsewhere},
                follow_redirects=False,
            )  # fmt: skip
            assert away.headers["location"] == "/wiki"


def test_the_csrf_rules_hold_for_a_signed_in_person(settings, model, ada):
    """Signed in with a session cookie, a browser's write needs the page's CSRF token
    and our own origin, on the API and the page forms alike; a bearer token does not."""
    from tests.web.conftest import NOTE
    from web import csrf

    page = {"origin": "http://127.0.0.1", "sec-fetch-site": "same-origin"}
    with make_client(settings, model, start_worker=False) as client:
        assert sign_in(client, ada).status_code == 303
        token = csrf_token_of_login(client)
        for headers in (page, {"content-type": "text/plain"}):  # from a page, or a form
            bare = client.post("/api/submit", json=NOTE, headers=headers)
            assert bare.status_code == 403 and bare.json()["error"] == csrf.REFUSED
        foreign = {"origin": "http://evil.example", csrf.HEADER: token}
        assert client.post("/api/submit", json=NOTE, headers=foreign).status_code == 403
        form = client.post("/submit", data={"title": "x", "content": "y"}, headers=page)
        assert form.status_code == 403
        ok = client.post("/api/submit", json=NOTE, headers={**page, csrf.HEADER: token})
        assert ok.status_code == 202 and ok.json()["tasks"][0]["submitted_by"] == "Ada"
        client.cookies.clear()
        script = client.post("/api/submit", json=NOTE, headers={"authorization": f"Bearer {ada}"})
        assert script.status_code == 202
