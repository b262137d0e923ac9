"""A lost state.db gets its queue back from the inbox: every upload not compiled yet is a
task again, with its title, file name and kind, queued once however many threads find
the loss at the same moment; and an upload the disk cannot take is refused whole."""

import threading
from contextlib import closing

import pytest

from compiler.queue import TaskQueue
from kb_ai.errors import StorageError
from tests.fakes.storage_faults import read_only
from wiki import open_state
from wiki.state import state_loss

NOTE = b"# Release train\n\nReleases leave every Tuesday at 10:00 from the main branch.\n"
DOC = b"%PDF-1.4 not really, but named like one\n"


def submitted(kb):
    with closing(open_state(kb)) as conn:
        queue = TaskQueue(kb, conn)
        note, _ = queue.submit("Release train", NOTE, filename="release.md")
        doc, _ = queue.submit("Budget", DOC, filename="budget.pdf", kind="document")
        done, _ = queue.submit("Done already", b"# Done\n\nCompiled.\n")
        queue.finish(done["id"], result={})  # its copy is gone: nothing to get back
    return note, doc


def test_the_inbox_is_queued_again_with_what_the_task_table_knew(kb):
    note, doc = submitted(kb)
    kb.state_db.unlink()
    with closing(open_state(kb)) as conn:
        queue = TaskQueue(kb, conn)
        tasks = {t["id"]: t for t in queue.list()}
        loss = state_loss(conn)
    assert sorted(tasks) == sorted([note["id"], doc["id"]])
    for before in (note, doc):
        after = tasks[before["id"]]
        assert after["state"] == "queued"
        for key in ("title", "filename", "kind", "checksum", "size", "created_at"):
            assert after[key] == before[key], key
    assert loss["rebuilt"]["tasks"] == 2


def test_threads_that_find_the_loss_together_queue_each_upload_once(kb):
    submitted(kb)
    kb.state_db.unlink()
    errors = []
    start = threading.Barrier(4)

    def open_queue():
        start.wait()
        try:
            with closing(open_state(kb)) as conn:
                TaskQueue(kb, conn).list()
        except Exception as exc:  # collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=open_queue) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    with closing(open_state(kb)) as conn:
        assert len(TaskQueue(kb, conn).list()) == 2
        assert state_loss(conn)["rebuilt"]["tasks"] == 2


def test_an_upload_the_inbox_cannot_take_is_refused_and_leaves_nothing(kb):
    with closing(open_state(kb)) as conn:
        queue = TaskQueue(kb, conn)
        queue.inbox.mkdir(parents=True, exist_ok=True)
        with read_only(queue.inbox), pytest.raises(StorageError) as caught:
            queue.submit("Release train", NOTE, filename="release.md")
        assert queue.list() == []
    assert "writable" in caught.value.hint
    assert list(queue.inbox.iterdir()) == []
