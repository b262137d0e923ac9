import json
from datetime import UTC, datetime

from wiki import (
    all_sources,
    get_source,
    last_run,
    open_state,
    record_run,
    source_articles,
    upsert_source,
)


def test_open_state_creates_the_tables_and_keeps_others(kb):
    conn = open_state(kb)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    conn.execute("CREATE TABLE llm_calls (id INTEGER PRIMARY KEY)")
    conn.execute("INSERT INTO llm_calls DEFAULT VALUES")
    conn.commit()
    conn.close()

    conn = open_state(kb)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"sources", "runs", "llm_calls", "schema_versions"} <= tables
    assert conn.execute("SELECT count(*) FROM llm_calls").fetchone()[0] == 1
    conn.close()
    assert kb.state_db.is_file()


def test_sources_upsert_and_read_back(kb):
    conn = open_state(kb)
    upsert_source(
        conn,
        "/notes/a.md",
        raw_path="raw/a.md",
        checksum="c1",
        model="m",
        prompt_version="3",
        status="ok",
        articles=["wiki/t/a.md"],
    )
    upsert_source(
        conn,
        "/notes/a.md",
        raw_path="raw/a.md",
        checksum="c2",
        model="m",
        prompt_version="3",
        status="failed",
        error="timeout",
        articles=[],
    )

    row = get_source(conn, "/notes/a.md")
    assert (row["checksum"], row["status"], row["error"]) == ("c2", "failed", "timeout")
    assert source_articles(row) == []
    assert get_source(conn, "/notes/none.md") is None
    conn.close()


def test_all_sources_is_one_query(kb):
    conn = open_state(kb)
    with conn:
        for i in range(1000):
            upsert_source(
                conn,
                f"/notes/{i}.md",
                raw_path=f"raw/{i}.md",
                checksum=str(i),
                status="ok",
                articles=[f"wiki/t/{i}.md"],
            )
    statements = []
    conn.set_trace_callback(statements.append)
    sources = all_sources(conn)
    conn.set_trace_callback(None)
    assert len(sources) == 1000 and sources["/notes/7.md"]["checksum"] == "7"
    assert statements == ["SELECT * FROM sources"]
    conn.close()


def test_runs(kb):
    conn = open_state(kb)
    assert last_run(conn) is None
    started = datetime(2024, 5, 2, 10, 0, tzinfo=UTC)
    first = record_run(conn, started, started, {"compiled": 1}, "abc1234")
    second = record_run(conn, "2024-05-03T10:00:00", "2024-05-03T10:01:00", {"compiled": 0}, None)

    run = last_run(conn)
    assert second > first and run["id"] == second
    assert json.loads(run["summary"]) == {"compiled": 0} and run["commit_sha"] is None
    conn.close()
