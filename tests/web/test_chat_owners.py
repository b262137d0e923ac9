"""A chat session belongs to the person who began it: no one else lists, opens,
continues, renames or deletes it (an admin neither: a 404, as for a session that does
not exist). Sessions no person owns (begun before there were people, or with the
server's token) stay with the token's holder and the admins."""

from contextlib import closing

import pytest

from kb_ai.errors import NotFoundError
from kb_ai.service import open_kb, people
from retrieval.sessions import MIGRATIONS, ChatStore
from tests.web.conftest import make_client
from wiki import open_state
from wiki.schema import apply_migrations

TOKEN = "s3cret-token-0123456789"


def bearer(token):
    return {"authorization": f"Bearer {token}"}


@pytest.fixture
def tokens(settings):
    okb = open_kb(settings=settings)
    return {
        name: people.add(okb, name, role)[1]
        for name, role in [("Rita", "reader"), ("Cora", "contributor"), ("Ada", "admin")]
    }


def listed(client, token=None):
    headers = bearer(token) if token else {}
    r = client.get("/api/sessions", headers=headers)
    assert r.status_code == 200, r.text
    return [s["title"] for s in r.json()["sessions"]]


def test_a_persons_chat_sessions_are_theirs_alone(settings, model, tokens):
    rita, cora, ada = tokens["Rita"], tokens["Cora"], tokens["Ada"]
    with make_client(settings, model, start_worker=False) as client:
        made = client.post(
            "/api/sessions", json={"title": "My salary review"}, headers=bearer(rita)
        )
        assert made.status_code == 201
        sid = made.json()["session"]["id"]
        client.post("/api/sessions", json={"title": "Cora's chat"}, headers=bearer(cora))
        assert listed(client, rita) == ["My salary review"]
        assert listed(client, cora) == ["Cora's chat"]
        assert listed(client, ada) == []  # an admin sees no one else's questions
        for other in (cora, ada):
            for method, body in (("GET", None), ("PATCH", {"title": "x"}), ("DELETE", None)):
                r = client.request(method, f"/api/sessions/{sid}", json=body, headers=bearer(other))
                assert r.status_code == 404, (method, r.text)
                assert r.json()["kind"] == "NotFoundError"
            asked = client.post(
                "/api/ask",
                json={"question": "And the raise?", "session": sid},
                headers=bearer(other),
            )
            assert asked.status_code == 404, asked.text  # not continued, before any answer
            page = client.get(f"/chat/{sid}", headers=bearer(other))
            assert page.status_code == 404 and "My salary review" not in page.text
            assert "My salary review" not in client.get("/chat", headers=bearer(other)).text
        mine = client.get(f"/api/sessions/{sid}", headers=bearer(rita)).json()["session"]
        assert mine["title"] == "My salary review" and mine["messages"] == []
        assert "My salary review" in client.get(f"/chat/{sid}", headers=bearer(rita)).text


def test_sessions_no_person_owns_stay_with_the_token_holder_and_the_admins(settings, model):
    with make_client(settings, model, start_worker=False) as client:  # no people yet
        before = client.post("/api/sessions", json={"title": "From before people"})
        sid = before.json()["session"]["id"]
    okb = open_kb(settings=settings)
    rita = people.add(okb, "Rita", "reader")[1]
    ada = people.add(okb, "Ada", "admin")[1]
    with make_client(settings, model, token=TOKEN, start_worker=False) as client:
        client.post("/api/sessions", json={"title": "The token's own"}, headers=bearer(TOKEN))
        client.post("/api/sessions", json={"title": "Ada's own"}, headers=bearer(ada))
        assert sorted(listed(client, TOKEN)) == ["From before people", "The token's own"]
        assert sorted(listed(client, ada)) == ["Ada's own", "From before people", "The token's own"]
        assert listed(client, rita) == []
        assert client.get(f"/api/sessions/{sid}", headers=bearer(rita)).status_code == 404
        renamed = client.patch(f"/api/sessions/{sid}", json={"title": "Old"}, headers=bearer(ada))
        assert renamed.json()["session"]["title"] == "Old"


def test_an_older_state_db_is_upgraded_and_its_sessions_have_no_owner(kb):
    """A state.db from before sessions had owners (chat schema version 3)."""
    old = MIGRATIONS[:3]
    with closing(open_state(kb)) as conn:
        apply_migrations(conn, "chat", old)
        conn.execute(
            "INSERT INTO chat_sessions (id, title, created_at, updated_at)"
            " VALUES ('s1', 'Kept from before', '2026-01-01T00:00:00+00:00', '2026-01-01T00:00:00+00:00')"
        )
        conn.execute(
            "INSERT INTO chat_messages (session_id, role, content, created_at)"
            " VALUES ('s1', 'user', 'When do backups run?', '2026-01-01T00:00:00+00:00')"
        )
        conn.commit()
    with closing(open_state(kb)) as conn:
        assert [s["title"] for s in ChatStore(conn).list()] == ["Kept from before"]
        version = conn.execute(
            "SELECT version FROM schema_versions WHERE component = 'chat'"
        ).fetchone()[0]
        assert version == len(MIGRATIONS) > len(old)
        assert ChatStore(conn, "Rita").list() == []
        with pytest.raises(NotFoundError, match="No chat session"):
            ChatStore(conn, "Rita").get("s1")
        admin = ChatStore(conn, "Ada", ownerless=True).get("s1")
        assert [m["content"] for m in admin["messages"]] == ["When do backups run?"]
