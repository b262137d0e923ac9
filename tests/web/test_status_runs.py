"""Status shows every compile, whoever started it, with the stage it is at."""

import os
from contextlib import closing

from click.testing import CliRunner

from kb_ai.cli import main
from tests.web.conftest import NOTE, wait_for
from wiki import open_state, set_run_stage, start_run


def test_a_compile_run_from_the_command_line_appears_on_status(client, kb, fake_model, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "retries.md").write_text(
        "# Job retries\n\nA failed job is retried 5 times, with a backoff of 30 seconds.\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(main, ["--kb", str(kb.root), "compile", str(notes)])
    assert result.exit_code == 0, result.output

    runs = client.get("/api/tasks").json()["runs"]
    assert len(runs) == 1
    run = runs[0]
    assert run["started_by"] == "cli" and run["state"] == "done"
    assert run["compiled"] == 1 and run["created"] and run["commit"]
    page = client.get("/status").text
    assert 'data-run="' in page and "<td>cli</td>" in page
    assert run["created"][0] in page

    # the source goes: the removal is listed too, naming the article it deleted
    result = CliRunner().invoke(main, ["--kb", str(kb.root), "rm", str(notes / "retries.md")])
    assert result.exit_code == 0, result.output
    latest = client.get("/api/tasks").json()["runs"][0]
    assert (latest["started_by"], latest["state"], latest["removed"]) == ("cli", "done", 1)
    assert latest["deleted"] == run["created"] and latest["commit"], latest
    page = client.get("/status").text
    assert "removed 1 source(s)" in page
    assert f'<del class="gone" title="deleted: no source left">{run["created"][0]}</del>' in page


def test_a_web_submission_is_listed_as_a_compile_from_the_web(client):
    task = client.post("/api/submit", json=NOTE).json()["tasks"][0]
    assert wait_for(client, task["id"])["state"] == "done"
    runs = client.get("/api/tasks").json()["runs"]
    assert [(r["started_by"], r["state"]) for r in runs] == [("web", "done")]


def test_a_running_compile_shows_its_stage_and_a_vanished_one_shows_as_stopped(client, kb):
    with closing(open_state(kb)) as conn:
        here = start_run(conn, "cli", 4, os.getpid())
        set_run_stage(conn, here, "write", 1, 3)
        gone = start_run(conn, "agent hook", 2, 2**22 + 12345)  # no such process
    runs = {r["id"]: r for r in client.get("/api/tasks").json()["runs"]}
    assert runs[here]["state"] == "running" and runs[here]["stage"] == "write"
    assert (runs[here]["done"], runs[here]["total"]) == (1, 3)
    assert runs[gone]["state"] == "stopped" and runs[gone]["stage"] is None
    assert "write 1/3" in client.get("/status").text


def test_status_sees_a_new_stage_at_once_and_counts_within_half_a_second(client, kb):
    """A compile writes its stage to state.db at once, but a count of documents done at
    most every SAVE_EVERY_S (each write held the event loop ~2 ms per document), and the
    last one at once."""
    from compiler.runs import SAVE_EVERY_S, RunTracker

    now = [100.0]
    tracker = RunTracker(kb, "cli", lambda *a, **k: None, clock=lambda: now[0])
    tracker.start(3)

    def shown():
        (run,) = [r for r in client.get("/api/tasks").json()["runs"] if r["id"] == tracker.run_id]
        return run["stage"], run["done"], run["total"]

    tracker("stage", name="extract", total=3)
    assert shown() == ("extract", 0, 3)
    tracker("advance", name="extract")
    assert shown() == ("extract", 0, 3)  # moments after the last write: not yet
    now[0] += SAVE_EVERY_S
    tracker("advance", name="extract")
    assert shown() == ("extract", 2, 3)  # half a second on: written, with both
    tracker("stage", name="write", total=3)  # a stage change is written at once
    assert shown() == ("write", 0, 3)
    for _ in range(3):
        tracker("advance", name="write")
    assert shown() == ("write", 3, 3)  # the last document: at once
