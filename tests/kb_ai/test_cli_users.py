"""`kb-ai users` and `kb-ai audit`: a token is printed once, on the last line, and only
its hash is kept in state.db."""

import json

from click.testing import CliRunner

from kb_ai.cli import main


def kb_ai(kb, *args):
    return CliRunner().invoke(main, ["--kb", str(kb.root), *args])


def test_a_token_is_printed_once_and_only_its_hash_is_kept(kb):
    added = kb_ai(kb, "users", "add", "Ada Lovelace", "--role", "contributor")
    assert added.exit_code == 0, added.output
    token = added.output.strip().splitlines()[-1]
    assert token.startswith("kb_") and len(token) > 40
    assert added.output.count(token) == 1
    stored = kb.state_db.read_bytes() + b"".join(
        p.read_bytes() for p in kb.state_dir.glob("state.db*")
    )
    secret = token.split(".", 1)[1]
    assert secret.encode() not in stored and token.encode() not in stored

    listed = json.loads(kb_ai(kb, "users", "list", "--json").output)
    assert [(p["name"], p["role"]) for p in listed] == [("Ada Lovelace", "contributor")]
    assert token not in kb_ai(kb, "users", "list").output


def test_role_token_and_remove_change_the_person_and_are_audited(kb):
    from kb_ai.service import open_kb
    from wiki import open_state
    from wiki.people import PeopleStore

    first = kb_ai(kb, "users", "add", "Grace", "--role", "reader").output.splitlines()[-1]
    assert kb_ai(kb, "users", "role", "Grace", "reviewer").exit_code == 0
    second = kb_ai(kb, "users", "token", "Grace").output.splitlines()[-1]
    assert second != first
    conn = open_state(open_kb(kb.root, detect=False).kb)
    store = PeopleStore(conn)
    assert store.verify(first) is None  # the old token is revoked
    assert store.verify(second).role == "reviewer"
    assert kb_ai(kb, "users", "remove", "Grace").exit_code == 0
    assert store.verify(second) is None and store.list() == []

    entries = json.loads(kb_ai(kb, "audit", "--json").output)
    assert [(e["action"], e["target"]) for e in entries] == [
        ("person-add", "Grace"),
        ("role-change", "Grace"),
        ("token-change", "Grace"),
        ("person-remove", "Grace"),
    ]
    assert entries[1]["detail"] == "reader -> reviewer" and entries[0]["address"] == "cli"
    text = kb_ai(kb, "audit").output
    assert first not in text and second not in text
    assert kb_ai(kb, "audit", "--since", "2999-01-01").output == ""


def test_bad_names_and_roles_say_what_to_do(kb):
    unknown = kb_ai(kb, "users", "role", "Nobody", "admin")
    assert unknown.exit_code == 2 and "kb-ai users list" in unknown.output
    kb_ai(kb, "users", "add", "Ada")
    again = kb_ai(kb, "users", "add", "Ada")
    assert again.exit_code == 2 and "kb-ai users token" in again.output
    assert kb_ai(kb, "users", "add", "Eve", "--role", "owner").exit_code == 2


def test_the_audit_log_cannot_be_rewritten(kb):
    import sqlite3

    import pytest

    from wiki import open_state
    from wiki.audit import AuditLog

    log = AuditLog(open_state(kb))
    log.record("Ada", "submit", "note.md", address="127.0.0.1")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        log.conn.execute("UPDATE audit SET who = 'Eve'")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        log.conn.execute("DELETE FROM audit")
    assert [e.who for e in log.entries()] == ["Ada"]


def test_audit_since_takes_a_date_or_a_time_in_any_zone_and_refuses_anything_else(kb):
    from wiki import open_state
    from wiki.audit import AuditLog

    log = AuditLog(open_state(kb))
    for at, who in [("2026-11-30T23:59:59+00:00", "Ada"), ("2026-12-01T08:30:00+00:00", "Bo")]:
        with log.conn:
            log.conn.execute(
                "INSERT INTO audit (at, who, action) VALUES (?, ?, 'submit')", (at, who)
            )

    def since(when):
        return [e["who"] for e in json.loads(kb_ai(kb, "audit", "--json", "--since", when).output)]

    assert since("2026-12-01") == ["Bo"]
    assert since("2026-12-01T08:30") == ["Bo"]  # UTC, as the entries are written
    assert since("2026-12-01T10:00+02:00") == ["Bo"]  # 08:00 UTC
    assert since("2026-12-01T09:00+00:00") == []
    bad = kb_ai(kb, "audit", "--since", "yesterday")
    assert bad.exit_code == 2 and "'yesterday' is not a date or time" in bad.output
    assert "2026-12-01T09:30" in bad.output  # the hint shows the form


def test_removing_a_person_deletes_their_chat_sessions_and_no_one_elses(kb):
    """Their questions were theirs alone: they are not left for an admin (or the next
    person given the name) to read."""
    from contextlib import closing

    from retrieval import ChatStore
    from wiki import open_state

    for name in ("Grace", "Alan"):
        assert kb_ai(kb, "users", "add", name, "--role", "reader").exit_code == 0
    with closing(open_state(kb)) as conn:
        grace = ChatStore(conn, "Grace")
        for title in ("Grace's first", "Grace's second"):
            grace.append(grace.create(title)["id"], "user", "What is my leave balance?")
        ChatStore(conn, "Alan").create("Alan's")
        ChatStore(conn).create("Nobody's")
    removed = kb_ai(kb, "users", "remove", "Grace")
    assert removed.exit_code == 0, removed.output
    assert "2 chat session(s)" in removed.output
    with closing(open_state(kb)) as conn:
        assert ChatStore(conn, "Grace").list() == []
        assert [s["title"] for s in ChatStore(conn, "Alan").list()] == ["Alan's"]
        assert [s["title"] for s in ChatStore(conn).list()] == ["Nobody's"]
        left = conn.execute("SELECT content FROM chat_messages").fetchall()
        assert "What is my leave balance?" not in [r[0] for r in left]
    assert kb_ai(kb, "users", "add", "Grace", "--role", "reader").exit_code == 0
    with closing(open_state(kb)) as conn:
        assert ChatStore(conn, "Grace").list() == []  # a new Grace finds nothing
    (entry,) = [e for e in json.loads(kb_ai(kb, "audit", "--json").output)
                if e["action"] == "person-remove"]  # fmt: skip
    assert entry["detail"] == "2 chat session(s) deleted"
    failed = kb_ai(kb, "users", "remove", "Nobody")
    assert failed.exit_code != 0 and "No person named" in failed.output
