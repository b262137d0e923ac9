"""With database_url people, roles, tokens and the audit log live in PostgreSQL: a
person added on one server signs in on another, and the log stays append-only there."""

import json
from contextlib import closing

import psycopg
import pytest
from click.testing import CliRunner

from kb_ai.cli import main
from wiki import open_state
from wiki.audit import AuditLog
from wiki.people import PeopleStore


def kb_ai(kb, *args):
    return CliRunner().invoke(main, ["--kb", str(kb.root), *args])


def test_a_person_added_on_one_server_is_known_on_every_other(shared, second):
    added = kb_ai(shared, "users", "add", "Ada Lovelace", "--role", "contributor")
    assert added.exit_code == 0, added.output
    token = added.output.strip().splitlines()[-1]
    listed = json.loads(kb_ai(second, "users", "list", "--json").output)
    assert [(p["name"], p["role"]) for p in listed] == [("Ada Lovelace", "contributor")]
    with closing(open_state(second)) as conn:
        assert PeopleStore(conn).verify(token).name == "Ada Lovelace"
        assert PeopleStore(conn).verify(token[:-2] + "xx") is None
    # a new token given on the second server revokes the old one on the first
    assert kb_ai(second, "users", "token", "Ada Lovelace").exit_code == 0
    with closing(open_state(shared)) as conn:
        assert PeopleStore(conn).verify(token) is None
    audit = kb_ai(second, "audit").output
    assert "person-add Ada Lovelace" in audit and "token-change Ada Lovelace" in audit


def test_the_shared_audit_log_cannot_be_rewritten(shared, pg_url):
    with closing(open_state(shared)) as conn:
        AuditLog(conn).record("Ada", "submit", "note.md", address="127.0.0.1")
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for sql in ("UPDATE audit SET who = 'Eve'", "DELETE FROM audit", "TRUNCATE audit"):
            with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
                conn.execute(sql)
    with closing(open_state(shared)) as conn:
        assert [e.who for e in AuditLog(conn).entries()] == ["Ada"]


def test_a_person_removed_on_one_server_leaves_no_chat_session_on_any(shared, second):
    from retrieval import ChatStore

    assert kb_ai(shared, "users", "add", "Grace", "--role", "reader").exit_code == 0
    with closing(open_state(shared)) as conn:
        sid = ChatStore(conn, "Grace").create("Grace's questions")["id"]
        ChatStore(conn, "Grace").append(sid, "user", "What is my leave balance?")
        ChatStore(conn).create("Nobody's")
    removed = kb_ai(second, "users", "remove", "Grace")
    assert removed.exit_code == 0 and "1 chat session(s)" in removed.output
    with closing(open_state(shared)) as conn:
        assert ChatStore(conn, "Grace").list() == []
        assert [s["title"] for s in ChatStore(conn).list()] == ["Nobody's"]
