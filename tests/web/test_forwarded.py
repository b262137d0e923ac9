"""Behind a reverse proxy: a trusted proxy's X-Forwarded-For is the address kb-ai audits
and slows failed sign-ins by, its X-Forwarded-Proto https makes session cookies Secure,
and its user header names the person, also when it runs on the same host as
`kb-ai serve` (which gives the proxy's headers to no one else)."""

import httpx
import pytest
from starlette.testclient import TestClient

from kb_ai.errors import ConfigError
from kb_ai.service import open_kb, people
from kb_ai.settings import load_settings
from tests.fakes.kb_responder import respond
from tests.web.conftest import LOOPBACK, NOTE, serving
from web import create_app

PROXY = (
    'trusted_user_header = "X-Forwarded-User"\ntrusted_proxies = "{}"\n'
    'default_role = "contributor"\n'
)


def test_a_sign_on_proxy_on_this_host_names_people_to_kb_ai_serve(kb):
    """oauth2-proxy (or nginx) on the same host sends X-Forwarded-For along with the
    person: they are still believed, and the audit log has the person's own address."""
    kb.config_path.write_text(kb.config_path.read_text() + PROXY.format("127.0.0.1"))
    forwarded = {"x-forwarded-user": "Nia New", "x-forwarded-for": "203.0.113.7"}
    with serving(kb.root, respond, ready_headers=forwarded) as live:
        submitted = httpx.post(f"{live.url}/api/submit", json=NOTE, headers=forwarded, timeout=30)
        assert submitted.status_code == 202, submitted.text
        assert submitted.json()["tasks"][0]["submitted_by"] == "Nia New"
    (entry,) = [e for e in people.entries(open_kb(kb.root, detect=False)) if e.action == "submit"]
    assert (entry.who, entry.address) == ("Nia New", "203.0.113.7")


@pytest.fixture
def behind_proxy(kb, model):
    """The app with a proxy at 10.0.0.0/8 and a person, and clients at the proxy and
    elsewhere."""
    kb.config_path.write_text(kb.config_path.read_text() + 'trusted_proxies = "10.0.0.0/8"\n')
    settings = load_settings(kb.root, {"model": "fake/model"}, environ={})
    _, token = people.add(open_kb(settings=settings), "Ada", "contributor")
    app = create_app(settings, llm_factory=model.factory, start_worker=False)
    return token, lambda address: TestClient(app, base_url=LOOPBACK, client=(address, 4000))


def sign_in(client, token, **headers):
    page = client.get("/login", headers=headers).text
    csrf = page.split('name="kb-ai-csrf" content="')[1].split('"')[0]
    return client.post(
        "/login", data={"csrf": csrf, "token": token}, headers=headers, follow_redirects=False
    )


def test_behind_an_https_proxy_the_session_cookie_is_secure(behind_proxy):
    token, client_at = behind_proxy
    with client_at("10.1.2.3") as proxy, client_at("192.0.2.9") as direct:
        https = {"x-forwarded-proto": "https", "x-forwarded-for": "198.51.100.1"}
        assert "; Secure" in sign_in(proxy, token, **https).headers["set-cookie"]
        # the same headers from an address that is not the proxy are not believed
        assert "; Secure" not in sign_in(direct, token, **https).headers["set-cookie"]


def test_failed_sign_ins_behind_a_proxy_slow_the_person_not_everyone(behind_proxy, kb):
    token, client_at = behind_proxy
    with client_at("10.1.2.3") as proxy, client_at("192.0.2.9") as direct:
        mallory = {"x-forwarded-for": "198.51.100.66"}
        assert sign_in(proxy, "kb_guess.wrong", **mallory).status_code == 401
        assert sign_in(proxy, token, **mallory).status_code == 429  # she waits
        ada = {"x-forwarded-for": "198.51.100.1"}
        assert sign_in(proxy, token, **ada).status_code == 303  # Ada, behind the same proxy
        # a client that is not the proxy cannot claim another's address
        assert sign_in(direct, "kb_guess.wrong", **ada).status_code == 401
        assert sign_in(proxy, token, **ada).status_code == 303
    failed = [e.address for e in people.entries(open_kb(kb.root, detect=False))
              if e.action == "sign-in-failed"]  # fmt: skip
    assert failed == ["198.51.100.66", "192.0.2.9"]


def test_a_user_header_without_proxies_to_believe_it_from_is_an_error(kb):
    kb.config_path.write_text(kb.config_path.read_text() + 'trusted_user_header = "X-User"\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(kb.root, environ={})
    assert "trusted_proxies" in str(caught.value) and "127.0.0.1" in caught.value.hint


def test_someone_the_proxy_names_who_is_not_a_person_here_is_a_reader(kb, model):
    kb.config_path.write_text(
        kb.config_path.read_text()
        + 'trusted_user_header = "X-User"\ntrusted_proxies = "10.0.0.1"\n'
    )
    settings = load_settings(kb.root, {"model": "fake/model"}, environ={})
    app = create_app(settings, llm_factory=model.factory, start_worker=False)
    with TestClient(app, base_url=LOOPBACK, client=("10.0.0.1", 4000)) as proxy:
        nia = {"x-user": "Nia New"}
        assert "Nia New (reader)" in proxy.get("/status", headers=nia).text
        assert proxy.post("/api/submit", json=NOTE, headers=nia).status_code == 403
