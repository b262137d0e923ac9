"""Every state-changing page form checks its CSRF field (issue 24, finding 4).

The routes are read from the app itself, so a page route added later is walked too: any
route outside the script paths (/api, /mcp, /healthz) that takes POST, PUT, PATCH or
DELETE must refuse a form without the page's token, before it does anything, whether
the post looks like a browser's (same-origin headers) or a script's (no headers).
"""

from __future__ import annotations

import uuid

from starlette.routing import BaseRoute, Mount, Route

from tests.conftest import compile_notes
from tests.web.conftest import LOOPBACK, csrf_token, make_client
from web import csrf
from web.auth import SCRIPT_PATHS
from wiki import list_articles

WRITES = {"POST", "PUT", "PATCH", "DELETE"}
# A value for each kind of path parameter; the route refuses before it reads any of them.
SAMPLES = {"int": 1, "float": 1.0, "uuid": uuid.UUID(int=1), "path": "raw/x.md"}
BROWSER = {"origin": LOOPBACK, "sec-fetch-site": "same-origin"}
JSON = {"accept": "application/json"}


def page_form_routes(routes: list[BaseRoute], prefix: str = "") -> list[tuple[str, str]]:
    """(method, url) of every state-changing route outside the script paths, filled in."""
    found = []
    for route in routes:
        if isinstance(route, Mount):
            found += page_form_routes(route.routes, prefix + route.path)
        elif isinstance(route, Route) and WRITES & set(route.methods or ()):
            params = {
                name: SAMPLES.get(type(c).__name__.removesuffix("Convertor").lower(), "x")
                for name, c in route.param_convertors.items()
            }
            url = prefix + route.url_path_for(route.name, **params)
            if not url.startswith(SCRIPT_PATHS):
                found += [(method, url) for method in sorted(WRITES & set(route.methods))]
    return found


def test_every_page_form_refuses_a_post_without_its_csrf_field(settings, model):
    with make_client(settings, model) as client:
        token = csrf_token(client)
        walked = page_form_routes(client.app.routes)
        urls = {url for _, url in walked}
        # the walk sees the page forms (were it to find none, it would prove nothing)
        assert {"/submit", "/remove/raw/x.md", "/review/x/x", "/status/x/x"} <= urls, urls
        for method, url in walked:
            for headers, form in [
                (BROWSER, {"title": "x"}),  # a page's post without the field
                ({}, {"title": "x"}),  # a script's post: page forms always want the field
                (BROWSER, {"csrf": "not-the-token", "title": "x"}),
            ]:
                response = client.request(method, url, data=form, headers={**headers, **JSON})
                assert response.status_code == 403, (method, url, headers, response.text)
                assert response.json()["error"] == csrf.REFUSED, (method, url)
            # with the page's token the same post gets past the check (to whatever the
            # route says of the made-up parameters): the field is what was refused
            allowed = client.request(
                method, url, data={"csrf": token, "title": "x"}, headers={**BROWSER, **JSON}
            )
            assert allowed.status_code != 403, (method, url, allowed.text)


NOTES = {"billing.md": "# Billing\n\nInvoices are sent on the first working day of each month.\n"}


def test_the_delete_button_without_the_field_removes_nothing(
    kb, fake_model, tmp_path, settings, model
):
    compile_notes(kb, NOTES, tmp_path)
    before = list_articles(kb)
    with make_client(settings, model) as client:
        refused = client.post("/remove/raw/billing.md", headers=BROWSER, follow_redirects=False)
    assert refused.status_code == 403
    assert list_articles(kb) == before and (kb.root / "raw" / "billing.md").is_file()


def test_a_review_is_not_approved_or_rejected_without_the_field(
    kb, fake_model, tmp_path, settings, model
):
    from click.testing import CliRunner

    from compiler.review import list_reviews
    from kb_ai.cli import main

    note = tmp_path / "billing.md"
    note.write_text(NOTES["billing.md"])
    held = CliRunner().invoke(main, ["--kb", str(kb.root), "compile", "--review", str(note)])
    assert held.exit_code == 0, held.output
    [run] = [r.run for r in list_reviews(kb)]
    with make_client(settings, model) as client:
        for action in ("approve", "reject"):
            refused = client.post(f"/review/{run}/{action}", headers=BROWSER)
            assert refused.status_code == 403
    assert [r.run for r in list_reviews(kb)] == [run] and list_articles(kb) == []
