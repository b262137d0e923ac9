"""One intake (compiler/intake.py): the same document named on the command line,
uploaded through the web app, or queued as a task (what an agent hook does) is detected
once, read once, and lands in raw/ as the same file."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from contextlib import closing
from pathlib import Path

import pytest

import compiler.discover
import compiler.sources
import compiler.transcripts
from compiler.queue import TaskQueue
from compiler.run import Compiler
from compiler.worker import Worker
from kb_ai.settings import load_settings
from tests.compiler.conftest import responder_handler
from tests.fakes.fake_llm import FakeLLM
from tests.web.conftest import Model, make_client
from wiki import KnowledgeBase, open_state

NOTE = """# Release train

Releases leave every second Tuesday at 10:00. A change that misses the train waits for
the next one; hotfixes go out on their own, approved by the on-call lead.
"""

# a chat with no session id: its title is its first request, however it arrives
CHAT = json.dumps(
    [
        {"role": "user", "content": "Why does the nightly backup job fail on Sundays?"},
        {"role": "assistant", "content": "The disk snapshot runs at 02:00 and locks the volume."},
        {"role": "user", "content": "Move the backup to 03:30 then."},
        {"role": "assistant", "content": "Done: the backup now starts at 03:30 UTC."},
    ]
)


def session(session_id: str) -> str:
    """A Claude Code session: known by its id whichever way it comes."""
    lines = []
    for n, (ask, done) in enumerate(
        [("Rename the gadget flag to widget.", "Renamed it; the tests pass.")]
    ):
        lines.append(json.dumps({"type": "user", "uuid": f"u{n}", "sessionId": session_id,
                                 "timestamp": "2026-03-01T10:00:00Z",
                                 "message": {"role": "user", "content": ask}}))  # fmt: skip
        lines.append(json.dumps({"type": "assistant", "uuid": f"a{n}", "sessionId": session_id,
                                 "message": {"role": "assistant", "id": f"m{n}",
                                             "content": [{"type": "text", "text": done}]}}))  # fmt: skip
    return "\n".join(lines) + "\n"


DOCUMENTS = {
    "release-train.md": ("note", NOTE),
    "backup-chat.json": ("transcript", CHAT),
    "rename-session.jsonl": ("transcript", session("sess-4711")),
}


@pytest.fixture
def detections(monkeypatch):
    """How often a transcript format was looked for, and a transcript parsed, per
    document (by its first characters)."""
    seen: Counter[tuple[str, str]] = Counter()

    def counting(what, fn):
        def wrapper(data, *args, **kwargs):
            text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
            seen[(what, text.lstrip("\ufeff")[:40])] += 1
            return fn(data, *args, **kwargs)

        return wrapper

    detect, parse = compiler.transcripts.detect, compiler.transcripts.parse
    for module in (compiler.transcripts, compiler.sources, compiler.discover):
        monkeypatch.setattr(module, "detect", counting("detect", detect), raising=False)
    monkeypatch.setattr(compiler.sources, "parse", counting("parse", parse))
    return seen


def fresh(tmp_path: Path, name: str):
    kb = KnowledgeBase.init(tmp_path / name)
    return kb, load_settings(kb.root, {"model": "fake/model"}, environ={})


def raw_files(kb: KnowledgeBase) -> dict[str, str]:
    """raw/ by file name, without the time each was taken in, where from (a path, a
    content hash) or who submitted it (the CLI's user, the queue's actor); an agent
    session's origin is its id, the same every way."""
    out = {}
    for path in sorted((kb.root / "raw").glob("*.md")):
        text = path.read_text(encoding="utf-8")
        text = re.sub(r"(?m)^ingested_at: .*\n", "", text)
        text = re.sub(r"(?m)^submitted_by: .*\n", "", text)
        text = re.sub(r"(?m)^origin: (?!'?session:).*\n", "", text)
        out[path.name] = text
    return out


def run_worker(kb, settings) -> None:
    worker = Worker(kb, settings, llm_factory=lambda s, **k: FakeLLM(responder_handler))
    asyncio.run(worker.run_once())


def check_each_read_once(detections: Counter) -> None:
    for name, (_, text) in DOCUMENTS.items():
        key = text[:40]
        assert detections[("detect", key)] == 1, (name, detections)
        expected_parses = 0 if name.endswith(".md") else 1
        assert detections[("parse", key)] == expected_parses, (name, detections)
    detections.clear()


def test_a_document_by_path_upload_or_queued_task_is_read_once_into_the_same_raw_file(
    tmp_path, detections
):
    files = tmp_path / "files"
    files.mkdir()
    for name, (_, text) in DOCUMENTS.items():
        (files / name).write_text(text, encoding="utf-8")

    by_path, settings = fresh(tmp_path, "by-path")
    compiler = Compiler(by_path, settings, llm_factory=lambda s, **k: FakeLLM(responder_handler))
    result = asyncio.run(compiler.compile_paths([files / n for n in DOCUMENTS]))
    assert not result.failed and len(result.compiled) == 3
    check_each_read_once(detections)

    uploaded, settings = fresh(tmp_path, "uploaded")
    with make_client(settings, Model(), start_worker=False) as client:
        upload = [("files", (n, text.encode(), "text/plain")) for n, (_, text) in DOCUMENTS.items()]
        r = client.post("/api/submit", files=upload)
        assert r.status_code == 202, r.text
    run_worker(uploaded, settings)
    check_each_read_once(detections)

    queued, settings = fresh(tmp_path, "queued")
    with closing(open_state(queued)) as conn:
        for name, (kind, text) in DOCUMENTS.items():
            TaskQueue(queued, conn).submit(name, text.encode(), filename=name, kind=kind)
    run_worker(queued, settings)
    check_each_read_once(detections)

    expected = raw_files(by_path)
    assert len(expected) == 3
    titles = sorted(re.search(r"(?m)^title: (.*)$", t).group(1) for t in expected.values())
    assert titles == [
        "Release train",
        "Rename the gadget flag to widget.",
        "Why does the nightly backup job fail on Sundays?",
    ]
    assert raw_files(uploaded) == expected
    assert raw_files(queued) == expected


def test_a_queued_session_with_nothing_new_is_skipped_without_being_read_again(tmp_path):
    kb, settings = fresh(tmp_path, "kb")
    files = tmp_path / "files"
    files.mkdir()
    path = files / "rename-session.jsonl"
    path.write_text(session("sess-4711"), encoding="utf-8")
    compiler = Compiler(kb, settings, llm_factory=lambda s, **k: FakeLLM(responder_handler))
    first = asyncio.run(compiler.compile_paths([path]))
    assert first.compiled == ["session:claude-code:sess-4711#0-2"]
    again = Compiler(kb, settings, llm_factory=lambda s, **k: FakeLLM(responder_handler))
    second = asyncio.run(again.compile_paths([path]))
    assert second.skipped == ["session:claude-code:sess-4711"] and not second.compiled
