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
