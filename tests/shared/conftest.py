"""Tests against the real PostgreSQL server: each test gets a database of its own (a
uuid name), dropped after it; without a server answering they skip, naming the URL."""

import subprocess
import uuid

import pytest

from wiki import KnowledgeBase
from wiki.database import forget_databases

SERVER = "postgresql://root@127.0.0.1:5432"


def _admin():
    psycopg = pytest.importorskip("psycopg", reason="the postgres extra is not installed")
    try:
        return psycopg.connect(f"{SERVER}/postgres", autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        pytest.skip(f"no PostgreSQL server answers at {SERVER}/postgres: {exc}")


@pytest.fixture
def pg_url():
    """The URL of a new, empty database, dropped (with its connections) after the test."""
    name = f"kbai_test_{uuid.uuid4().hex[:12]}"
    with _admin() as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield f"{SERVER}/{name}"
    finally:
        forget_databases()
        with _admin() as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            conn.execute(f"DROP DATABASE IF EXISTS {name}_away WITH (FORCE)")


@pytest.fixture
def shared(kb, pg_url, monkeypatch):
    """``kb`` with KB_AI_DATABASE_URL naming the test's database."""
    monkeypatch.setenv("KB_AI_DATABASE_URL", pg_url)
    return kb


@pytest.fixture
def second(shared, tmp_path):
    """Another server's copy of the same knowledge base (a clone: the same first commit,
    its own work tree and state.db), sharing the database."""
    subprocess.run(
        ["git", "clone", "-q", str(shared.root), str(tmp_path / "second")],
        check=True,
        capture_output=True,
    )
    return KnowledgeBase.open(tmp_path / "second")
