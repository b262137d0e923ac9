"""With database_url one compile writes at a time across servers: the compile lock is
an advisory lock in PostgreSQL too; a writer that dies frees it; a wrong or unreachable
database_url fails at start with one clear line."""

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from click.testing import CliRunner

from kb_ai.cli import main
from wiki.lock import compile_lock

ROOT = Path(__file__).resolve().parents[2]


def test_two_writers_on_two_servers_take_the_lock_in_turn(shared, second):
    """The two work trees have lock files of their own: only the database's lock keeps
    the second writer waiting."""
    first = compile_lock(shared)
    assert first.acquire()
    other = compile_lock(second)
    assert not other.acquire(blocking=False)
    got = threading.Event()

    def wait_for_it():
        other.acquire()  # blocks until the first lets go
        got.set()

    waiter = threading.Thread(target=wait_for_it)
    waiter.start()
    assert not got.wait(0.5)  # still held: it waits
    first.release()
    waiter.join(20)
    assert got.is_set()
    other.release()
    again = compile_lock(shared)
    assert again.acquire(blocking=False)
    again.release()


HOLDER = """
import sys, time
from wiki import KnowledgeBase
from wiki.lock import compile_lock
lock = compile_lock(KnowledgeBase.open(sys.argv[1]))
lock.acquire()
print("holding", flush=True)
time.sleep(600)
"""


def test_a_writer_killed_holding_the_lock_frees_it(shared, second, pg_url):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KB_AI_DATABASE_URL": pg_url}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(second.root)], env=env,
                              stdout=subprocess.PIPE)  # fmt: skip
    try:
        assert holder.stdout.readline() == b"holding\n"
        assert not compile_lock(shared).acquire(blocking=False)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        holder.stdout.close()
    lock = compile_lock(shared)
    assert lock.acquire()  # the server ended the dead writer's session, and its lock
    lock.release()


def _status(kb, url):
    return CliRunner().invoke(
        main, ["--kb", str(kb.root), "status"], env={"KB_AI_DATABASE_URL": url}
    )


def test_an_unreachable_database_fails_at_start_with_one_clear_line(kb):
    result = _status(kb, "postgresql://root@127.0.0.1:1/kb")
    assert result.exit_code != 0
    assert "Could not reach the shared database postgresql://root@127.0.0.1:1/kb" in result.output
    assert "Traceback" not in result.output


def test_a_database_that_does_not_exist_is_named(kb, pg_url):
    result = _status(kb, pg_url + "_missing")
    assert result.exit_code != 0
    assert "does not exist" in result.output and "Traceback" not in result.output


def test_a_url_that_is_not_postgresql_is_refused(kb):
    result = _status(kb, "mysql://root@127.0.0.1/kb")
    assert result.exit_code != 0
    assert "database_url must be a PostgreSQL URL" in result.output


def test_a_password_is_never_printed(kb):
    result = _status(kb, "postgresql://root:s3cret@127.0.0.1:1/kb")
    assert result.exit_code != 0 and "s3cret" not in result.output


def test_a_writer_asking_again_and_again_for_a_taken_lock_keeps_one_connection(
    shared, second, monkeypatch
):
    """A run waiting for another server's writer asks for the lock every 50 ms: each try
    is a query on one kept connection, not a new session the database must start and end
    (twenty a second per waiting worker); letting go closes it."""
    import psycopg

    first = compile_lock(shared)
    assert first.acquire()
    made = []
    real_connect = psycopg.connect

    def counted(*args, **kwargs):
        conn = real_connect(*args, **kwargs)
        made.append(conn)
        return conn

    monkeypatch.setattr(psycopg, "connect", counted)
    other = compile_lock(second)
    assert not any(other.acquire(blocking=False, retry=True) for _ in range(10))
    assert len(made) == 1
    first.release()
    assert other.acquire(blocking=False, retry=True)  # on the same connection, now free
    assert len(made) == 1
    other.release()
    assert all(conn.closed for conn in made)
