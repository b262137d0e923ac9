"""With database_url chat sessions live in PostgreSQL: a session begun on one server is
continued on another, its messages in order."""

from contextlib import closing

import pytest

from kb_ai.errors import NotFoundError
from retrieval.sessions import ChatStore
from wiki import open_state


def test_a_chat_begun_on_one_server_is_continued_on_another(shared, second):
    with closing(open_state(shared)) as conn:
        here = ChatStore(conn)
        sid = here.create("Release questions")["id"]
        here.append(sid, "user", "When do releases leave?")
        here.append(sid, "assistant", "Every Tuesday at 10:00.", [{"path": "wiki/a.md"}])
    with closing(open_state(second)) as conn:
        there = ChatStore(conn)
        assert [s["id"] for s in there.list()] == [sid]
        there.append(sid, "user", "From which branch?")
        got = there.get(sid)
        assert [m["role"] for m in got["messages"]] == ["user", "assistant", "user"]
        assert got["messages"][1]["citations"] == [{"path": "wiki/a.md"}]
        assert [t.content for t in there.history(sid)][-1] == "From which branch?"
        assert there.rename(sid, "Releases")["title"] == "Releases"
        # this server's own state.db holds none of it
        assert (
            conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'chat_sessions'").fetchone()
            is None
        )
    with closing(open_state(shared)) as conn:
        here = ChatStore(conn)
        assert here.get(sid)["title"] == "Releases"
        here.delete(sid)
        with pytest.raises(NotFoundError):
            here.get(sid)
        with pytest.raises(NotFoundError):
            here.rename(sid, "gone")


def test_each_persons_sessions_are_theirs_on_every_server(shared, second):
    with closing(open_state(shared)) as conn:
        sid = ChatStore(conn, "Rita").create("My salary review")["id"]
        ChatStore(conn).create("Begun with the server's token")
    with closing(open_state(second)) as conn:
        assert [s["id"] for s in ChatStore(conn, "Rita").list()] == [sid]
        assert ChatStore(conn, "Cora").list() == []
        admin = ChatStore(conn, "Ada", ownerless=True)
        assert [s["title"] for s in admin.list()] == ["Begun with the server's token"]
        for store in (ChatStore(conn, "Cora"), admin, ChatStore(conn)):
            with pytest.raises(NotFoundError):
                store.append(sid, "user", "And the raise?")
            with pytest.raises(NotFoundError):
                store.delete(sid)
        assert ChatStore(conn, "Rita").get(sid)["messages"] == []


def test_a_shared_database_from_before_owners_is_upgraded(shared):
    """Sessions in PostgreSQL from a kb-ai whose chat schema was version 3: upgraded
    when a server opens them, and theirs to no person."""
    from retrieval.sessions import MIGRATIONS
    from wiki.database import PgConnection, forget_databases, shared_database

    db = shared_database(shared)
    db.migrate("chat", MIGRATIONS[:3])
    old = PgConnection(db)
    with old:
        old.execute(
            "INSERT INTO chat_sessions (id, title, created_at, updated_at) VALUES (?, ?, ?, ?)",
            ("s1", "Kept from before", "2026-01-01T00:00:00+00:00", "2026-01-01T00:00:00+00:00"),
        )
    forget_databases()  # as a new process of this kb-ai opens it
    with closing(open_state(shared)) as conn:
        assert [s["title"] for s in ChatStore(conn).list()] == ["Kept from before"]
        assert ChatStore(conn, "Rita").list() == []
        with shared_database(shared).connection() as pg:
            version = pg.execute(
                "SELECT version FROM kb_ai_schema WHERE component = 'chat'"
            ).fetchone()[0]
        assert version == len(MIGRATIONS)


def test_an_answer_keeps_its_checked_line_and_notes_on_every_server(shared, second):
    checked = "Cited claims: 1 of 1 supported by the lines they cite."
    note = "Answered from corpus releases: its 3 article(s) read whole."
    with closing(open_state(shared)) as conn:
        here = ChatStore(conn)
        sid = here.create("Release questions")["id"]
        here.append(sid, "user", "When do releases leave?")
        here.append(sid, "assistant", "Every Tuesday.", [], checked=checked, notes=[note])
    with closing(open_state(second)) as conn:
        asked, answered = ChatStore(conn).get(sid)["messages"]
    assert (answered["checked"], answered["notes"]) == (checked, [note])
    assert (asked["checked"], asked["notes"]) == ("", [])


def test_answers_kept_before_the_checked_line_are_upgraded_without_one(shared):
    """Chat schema version 5 in PostgreSQL: its answers open with no "Cited claims"
    line and no notes, and new answers keep theirs."""
    _chat_at_version(shared, 5, '[{"path": "wiki/a.md"}]')
    with closing(open_state(shared)) as conn:
        store = ChatStore(conn)
        (kept,) = store.get("s1")["messages"]
        assert (kept["content"], kept["checked"], kept["notes"]) == ("Every Tuesday.", "", [])
        store.append("s1", "assistant", "Again.", checked="Cited claims: 0 of 1 supported.")
        assert store.get("s1")["messages"][1]["checked"] == "Cited claims: 0 of 1 supported."


def test_a_failed_answer_is_kept_as_failed_on_every_server(shared, second):
    """Chat schema version 7 in PostgreSQL, upgraded: its rows read as no failure; a
    failed answer kept on one server is read on another with its error, and is no turn
    of the conversation and no message of the session's count."""
    _chat_at_version(shared, 7, "[]")
    timed_out = {
        "ok": False,
        "error": "openai/fake did not answer within 60 s (answer) (raise timeout_answer)",
        "status": 502,
        "kind": "LLMTimeoutError",
        "hint": "raise timeout_answer",
        "usage": {"calls": 1},  # (of the stream's event: not kept)
        "session": "s1",
    }
    with closing(open_state(shared)) as conn:
        here = ChatStore(conn)
        (kept,) = here.get("s1")["messages"]
        assert (kept["content"], kept["error"]) == ("Every Tuesday.", None)
        here.keep_failed("s1", "From which branch?", timed_out, [])
    with closing(open_state(second)) as conn:
        there = ChatStore(conn)
        *_, asked, failed = there.get("s1")["messages"]
        assert (asked["content"], asked["error"]) == ("From which branch?", None)
        assert failed["error"] == {
            k: timed_out[k] for k in ("ok", "error", "status", "kind", "hint")
        }
        assert (failed["role"], failed["content"], failed["citations"]) == ("assistant", "", [])
        assert [t.content for t in there.history("s1")] == ["Every Tuesday.", "From which branch?"]
        assert [s["messages"] for s in there.list()] == [2]


def _chat_at_version(shared, version: int, citations: str) -> None:
    """The shared database's chat tables at schema ``version`` holding one session "s1"
    with one answer, "Every Tuesday." (``citations`` as JSON), as an older kb-ai left it;
    then forgotten, as a new process of this kb-ai opens it."""
    from retrieval.sessions import MIGRATIONS
    from wiki.database import PgConnection, forget_databases, shared_database

    db = shared_database(shared)
    db.migrate("chat", MIGRATIONS[:version])
    then = "2026-01-01T00:00:00+00:00"
    with PgConnection(db) as old:
        old.execute(
            "INSERT INTO chat_sessions (id, title, created_at, updated_at) VALUES (?, ?, ?, ?)",
            ("s1", "Kept from before", then, then),
        )
        old.execute(
            "INSERT INTO chat_messages (session_id, role, content, citations, created_at)"
            " VALUES (?, ?, ?, ?, ?)",
            ("s1", "assistant", "Every Tuesday.", citations, then),
        )
    forget_databases()
