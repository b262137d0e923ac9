"""The server on a broken state.db (garbage written over it, a file nobody may write, the
file deleted while serving): every endpoint answers in the one error shape, /healthz
names what is wrong, the compile worker waits the fault out, and no task is lost."""

import shutil
import threading
import time

from tests.fakes.storage_faults import corrupt, unwritable
from tests.web.conftest import NOTE, make_client, respond, sse, wait_for
from web.health import HealthLimits


def healthz_until(client, wanted, timeout=20.0):
    """The /healthz reply once ``wanted(reply)`` holds."""
    deadline = time.monotonic() + timeout
    while True:
        r = client.get("/healthz")
        if wanted(r):
            return r
        assert time.monotonic() < deadline, r.text
        time.sleep(0.05)


def finished(client, task_id, timeout=20.0):
    """The task once done or failed; every reply on the way must name it."""
    deadline = time.monotonic() + timeout
    while True:
        r = client.get(f"/api/tasks/{task_id}")
        assert r.status_code == 200, r.text
        if r.json()["task"]["state"] in ("done", "failed"):
            return r.json()["task"]
        assert time.monotonic() < deadline, r.text
        time.sleep(0.05)


def submitted_held_at_write(client, model, release):
    """Submit the note and return its task once the compile waits in its write call;
    the call answers when ``release`` is set."""

    def slow(stage, messages, schema):
        if stage == "write":
            release.wait(20)
        return respond(stage, messages, schema)

    model.handler = slow
    task = client.post("/api/submit", json=NOTE).json()["tasks"][0]
    deadline = time.monotonic() + 20
    while client.get(f"/api/tasks/{task['id']}").json()["task"]["stage"] != "write":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return task


def test_a_corrupted_state_db_is_a_503_in_the_one_error_shape_everywhere(settings, model):
    with make_client(settings, model, worker_retry_seconds=0.05) as client:
        assert client.get("/healthz").status_code == 200
        corrupt(settings.kb_dir / ".kb-ai" / "state.db")
        for method, path, body in (
            ("GET", "/api/tasks", None),
            ("POST", "/api/submit", NOTE),
            ("GET", "/api/sessions", None),
        ):
            r = client.request(method, path, json=body)
            assert r.status_code == 503, (path, r.text)
            error = r.json()
            assert error["ok"] is False and error["status"] == 503
            assert error["kind"] == "StorageError"
            assert "state database" in error["error"] and "corrupted" in error["error"]
            assert "move" in error["error"]  # what to do
        page = client.get("/status", headers={"accept": "text/html"})
        assert page.status_code == 503
        assert "corrupted" in page.text and "Internal Server Error" not in page.text
        health = healthz_until(client, lambda r: r.status_code == 503 and "workers:" in r.text)
        body = health.json()
        assert body["ok"] is False and body["status"] == 503
        assert body["checks"]["database"]["ok"] is False
        assert body["checks"]["database"]["cause"] == "corrupt"
        assert body["checks"]["workers"]["ok"] is False  # waiting out the fault, not dead
        assert body["checks"]["workers"]["thread"] is True
        assert body["checks"]["disk"]["ok"] is True


def test_the_worker_outlives_a_corrupted_state_db_and_compiles_once_it_is_replaced(settings, model):
    db = settings.kb_dir / ".kb-ai" / "state.db"
    with make_client(settings, model, worker_retry_seconds=0.05) as client:
        assert client.get("/healthz").status_code == 200
        corrupt(db)
        healthz_until(client, lambda r: "compile worker(s) stopped" in r.text)
        time.sleep(0.6)  # several failed attempts in a row: 0.05, 0.1, 0.2, 0.4 s apart
        worker = client.get("/healthz").json()["checks"]["workers"]["workers"][0]
        assert worker["failures"] >= 3 and not worker["running"]
        assert "corrupted" in worker["error"]
        db.unlink()  # what the error says to do: move it aside; it is made again
        healthz_until(client, lambda r: r.status_code == 200)
        task = client.post("/api/submit", json=NOTE).json()["tasks"][0]
        done = wait_for(client, task["id"])
    assert done["state"] == "done", done["error"]


def test_tasks_held_when_state_db_stops_taking_writes_go_back_and_compile(settings, model):
    """Read-only while a compile runs: its tasks are handed back, not failed, and not
    left "running"; once the file takes writes again they compile."""
    db = settings.kb_dir / ".kb-ai" / "state.db"
    release = threading.Event()
    with make_client(settings, model, worker_retry_seconds=0.05) as client:
        task = submitted_held_at_write(client, model, release)
        files = sorted(db.parent.glob("state.db*"))
        with unwritable(files):  # the folder stays writable: the locks beside work
            release.set()  # the compile finishes and cannot record what it did
            health = healthz_until(client, lambda r: "compile worker(s) stopped" in r.text)
            assert health.status_code == 503
            assert health.json()["checks"]["database"]["ok"] is False
        done = wait_for(client, task["id"])
        health = healthz_until(client, lambda r: r.status_code == 200)
    assert done["state"] == "done", done["error"]
    assert done["attempts"] == 2  # handed back after the fault, compiled again
    assert health.json()["checks"]["workers"]["workers"][0]["running"] is True


def test_state_db_deleted_while_a_task_runs_loses_no_task_and_says_so(settings, model):
    db = settings.kb_dir / ".kb-ai" / "state.db"
    release = threading.Event()
    with make_client(settings, model, worker_retry_seconds=0.05) as client:
        task = submitted_held_at_write(client, model, release)
        db.unlink()
        release.set()
        done = finished(client, task["id"])
        status = client.get("/status").text
    assert done["state"] == "done", done["error"]
    assert "The state database was missing and was made again" in status
    assert "1 tasks" in status and "chat sessions" in status


def test_healthz_says_when_queued_work_is_not_taken(settings, model):
    limits = HealthLimits(stall_seconds=0.2)
    with make_client(settings, model, start_worker=False, health_limits=limits) as client:
        assert client.post("/api/submit", json=NOTE).status_code == 202
        time.sleep(0.3)
        r = client.get("/healthz")
    assert r.status_code == 503
    assert r.json()["checks"]["queue"]["ok"] is False
    assert "queue: 1 task(s) queued" in r.json()["error"]
    assert "no compile is running" in r.json()["error"]


def test_healthz_says_when_the_disk_is_nearly_full(settings, model):
    free = shutil.disk_usage(settings.kb_dir).free
    limits = HealthLimits(min_free_bytes=free * 2)  # more than this disk has free
    with make_client(settings, model, health_limits=limits) as client:
        r = client.get("/healthz")
    assert r.status_code == 503
    assert r.json()["checks"]["disk"]["ok"] is False
    assert r.json()["error"].startswith("unhealthy: disk: ")


def test_a_worker_thread_that_ended_is_started_again_and_says_so(settings, model):
    with make_client(settings, model) as client:
        pool = client.app.state.services.pool
        pool._loop.call_soon_threadsafe(pool._main.cancel)  # the thread ends, unasked
        pool._thread.join(10)
        assert not pool.alive()
        r = client.get("/healthz")
        assert r.json()["checks"]["workers"]["restarted"] is True
        assert r.json()["checks"]["workers"]["thread"] is True
        task = client.post("/api/submit", json=NOTE).json()["tasks"][0]
        done = wait_for(client, task["id"])
    assert done["state"] == "done", done["error"]


def test_the_queue_stream_says_the_database_failed_and_goes_on(settings, model):
    with make_client(settings, model, start_worker=False) as client:
        assert client.post("/api/submit", json=NOTE).status_code == 202
        with client.stream("GET", "/api/tasks/events") as r:
            events = sse(r)
            assert next(events)[0] == "tasks"
            corrupt(settings.kb_dir / ".kb-ai" / "state.db")
            kind, data = next(events)
            assert kind == "error"
            assert (data["ok"], data["status"], data["kind"]) == (False, 503, "StorageError")
            assert "corrupted" in data["error"]
            (settings.kb_dir / ".kb-ai" / "state.db").unlink()  # made again, queue rebuilt
            kind, data = next(events)
    assert kind == "tasks" and data["counts"]["queued"] == 1


def test_a_question_on_a_failing_state_db_gets_the_one_error_shape(compiled, settings, model):
    db = settings.kb_dir / ".kb-ai" / "state.db"

    def breaking(stage, messages, schema):  # the file breaks while the answer is written
        if stage == "answer" and db.stat().st_size:
            corrupt(db)
        return respond(stage, messages, schema)

    model.handler = breaking
    with compiled.stream("POST", "/api/ask", json={"question": "How long are backups kept?"}) as r:
        assert r.status_code == 200
        events = list(sse(r))
    kind, data = events[-1]
    assert kind == "error", events
    assert (data["ok"], data["status"], data["kind"]) == (False, 503, "StorageError")
    assert "corrupted" in data["error"] and data["session"] == r.headers["x-session-id"]
    # asked again, before any event: the same words as a JSON error
    r = compiled.post("/api/ask", json={"question": "How long are backups kept?"})
    assert r.status_code == 503
    assert r.json()["kind"] == "StorageError" and "corrupted" in r.json()["error"]
