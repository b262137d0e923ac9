"""A compile extracts before it takes the compile lock (compiler/ahead.py): a lock held
by another writer does not keep its model calls from starting, two runs extract at the
same time, and each still writes against the wiki as the other left it, in one commit."""

import asyncio
import threading
from contextlib import closing
from dataclasses import replace

import pytest

from compiler import Compiler
from tests.compiler.conftest import responder_handler
from tests.fakes.fake_llm import FakeLLM
from wiki import all_sources, git, list_articles, open_state, read_article
from wiki.lock import compile_lock


def _note(folder, name, text):
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def _compile(kb, settings, llm, paths, progress=None):
    compiler = Compiler(kb, settings, llm_factory=lambda s, **k: llm, progress=progress)
    return asyncio.run(compiler.compile_paths([str(p) for p in paths]))


@pytest.mark.parametrize("small", [False, True], ids=["composed", "small model"])
def test_a_lock_held_by_another_writer_does_not_stop_extraction(kb, settings, tmp_path, small):
    settings = replace(settings, small_model=small)
    notes = [
        _note(tmp_path / "notes", f"n{i}.md", f"# Subject {i}\n\nA fact about subject {i}.\n")
        for i in range(3)
    ]
    held = compile_lock(kb)  # another process's compile, writing
    assert held.acquire(blocking=False)
    llm = FakeLLM(responder_handler)
    waiting = threading.Event()
    results = {}

    def progress(event, **info):
        if event == "waiting":
            waiting.set()

    def run():
        results["run"] = _compile(kb, settings, llm, notes, progress)

    runner = threading.Thread(target=run)
    runner.start()
    try:
        assert waiting.wait(20), "the run never came to wait for the lock"
        # every source went to the model while the other writer held the lock ...
        assert llm.stages() == ["extract"] * 3
        # ... and nothing reached the knowledge base without the lock
        assert not list((kb.root / "raw").glob("*.md"))
        assert not list((kb.root / "extraction").glob("*.md"))
        assert git(kb, "status", "--porcelain").strip() == ""
    finally:
        held.release()
        runner.join(30)
    result = results["run"]
    assert len(result.compiled) == 3 and not result.failed
    assert llm.stages().count("extract") == 3  # not asked again under the lock
    assert len(list_articles(kb)) == 3
    assert len(git(kb, "log", "--format=%s").splitlines()) == 2  # one commit for the run
    assert git(kb, "status", "--porcelain").strip() == ""


def test_two_runs_extract_at_the_same_time_and_each_writes_on_the_others_wiki(
    kb, settings, tmp_path
):
    """Two writers (two workers, or the CLI beside the server) with one note each, of
    one subject: their extractions meet (each waits for the other's to start: under the
    lock that would never happen), then the one that writes second updates the article
    the first created, which it could only know of by classifying under the lock."""
    first = _note(tmp_path / "a", "backups.md", "# Backups\n\nNightly, kept 30 days.\n")
    second = _note(tmp_path / "b", "backups.md", "# Backups\n\nAn offsite copy weekly.\n")
    both_extracting = threading.Barrier(2, timeout=15)

    def handler(stage, messages, schema):
        if stage == "extract":
            both_extracting.wait()  # raises (the run fails) unless the other extracts too
        return responder_handler(stage, messages, schema)

    llms = [FakeLLM(handler, delay=0.05), FakeLLM(handler, delay=0.05)]
    results = {}

    def run(name, llm, note):
        results[name] = _compile(kb, settings, llm, [note])

    runs = [
        threading.Thread(target=run, args=("first", llms[0], first)),
        threading.Thread(target=run, args=("second", llms[1], second)),
    ]
    for t in runs:
        t.start()
    for t in runs:
        t.join(60)
    assert set(results) == {"first", "second"}
    assert all(len(r.compiled) == 1 and not r.failed for r in results.values())
    commits = [r.commit for r in results.values()]
    assert all(commits) and commits[0] != commits[1]
    assert len(git(kb, "log", "--format=%s").splitlines()) == 3  # one commit a run
    # one subject, one article, fed by both sources (none lost, none doubled)
    with closing(open_state(kb)) as conn:
        rows = all_sources(conn)
    raws = {rows[str(p.resolve())]["raw_path"] for p in (first, second)}
    assert len(raws) == 2
    (path,) = list_articles(kb)
    article = read_article(kb, path)
    assert set(article.sources) == raws
    assert "30 days" in article.body and "offsite" in article.body.lower()
    assert git(kb, "status", "--porcelain").strip() == ""


def test_an_extraction_that_failed_before_the_lock_fails_its_source_once(kb, settings, tmp_path):
    from kb_ai.errors import LLMTimeoutError

    good = _note(tmp_path / "n", "good.md", "# Good\n\nThe good note says this.\n")
    slow = _note(tmp_path / "n", "slow.md", "# Slow\n\nThe slow note says that.\n")

    def handler(stage, messages, schema):
        if stage == "extract" and "slow note" in messages[-1]["content"]:
            raise LLMTimeoutError("the model did not answer in 180 s")
        return responder_handler(stage, messages, schema)

    llm = FakeLLM(handler)
    result = _compile(kb, settings, llm, [good, slow])
    assert result.compiled == [str(good.resolve())]
    assert [f.source for f in result.failed] == [str(slow.resolve())]
    assert "did not answer" in result.failed[0].error
    assert llm.stages().count("extract") == 2  # the failed one was not asked again
    # its raw copy is kept, as before, for the next run
    assert any("slow note" in p.read_text() for p in (kb.root / "raw").glob("*.md"))


def test_a_free_lock_is_taken_at_once_and_each_source_is_classified_as_it_is_extracted(
    kb, settings, tmp_path
):
    """No other writer: the run takes the lock before its first model call and extracts
    under it, classifying a source while the next ones are being extracted. (Extracting
    everything ahead of the lock put a barrier between the two stages of every run: at
    16 calls in flight a whole round of calls was lost.) Two slots, three sources: the
    third extraction shares its round with the first source's classification."""
    notes = [
        _note(tmp_path / "notes", f"n{i}.md", f"# Subject {i}\n\nA fact about subject {i}.\n")
        for i in range(3)
    ]
    lock_free_at_extract = []
    beside_last_extract = []

    def handler(stage, messages, schema):
        if stage == "extract":
            probe = compile_lock(kb)  # a lock of its own: it conflicts with the run's
            lock_free_at_extract.append(probe.acquire(blocking=False))
            if lock_free_at_extract[-1]:
                probe.release()
            if "subject 2" in messages[-1]["content"]:
                beside_last_extract.append(llm.in_flight)  # itself, and what else
        return responder_handler(stage, messages, schema)

    llm = FakeLLM(handler, delay=0.05, max_concurrency=2)
    result = _compile(kb, settings, llm, notes)
    assert len(result.compiled) == 3 and not result.failed
    assert lock_free_at_extract == [False] * 3, "a source was extracted without the lock"
    assert beside_last_extract == [2], "no classification beside the last extraction"


def test_a_model_client_that_cannot_open_leaves_the_lock_free(kb, settings, tmp_path):
    """No model set (the client refuses to open) after the run took the free lock: the
    error is the user's to read, and the next compile, in any process, is not left
    waiting for a lock no one holds."""
    from kb_ai.errors import ConfigError

    note = _note(tmp_path / "notes", "n.md", "# Subject\n\nA fact.\n")

    def no_model(settings, **kwargs):
        raise ConfigError("No model is configured", hint="set model in kb-ai.toml")

    compiler = Compiler(kb, settings, llm_factory=no_model)
    with pytest.raises(ConfigError):
        asyncio.run(compiler.compile_paths([str(note)]))
    probe = compile_lock(kb)
    assert probe.acquire(blocking=False), "the compile lock was left held"
    probe.release()


def test_a_run_stopped_while_it_waits_for_the_lock_never_takes_it(kb, settings, tmp_path):
    """Ctrl-C (or a worker stopping) while another writer holds the lock: the run ends
    with its sources reported as interrupted, and takes the lock for no one once the
    other writer lets go."""
    note = _note(tmp_path / "notes", "n.md", "# Subject\n\nA fact.\n")
    held = compile_lock(kb)
    assert held.acquire(blocking=False)
    waiting = threading.Event()

    def progress(event, **info):
        if event == "waiting":
            waiting.set()

    llm = FakeLLM(responder_handler)
    compiler = Compiler(kb, settings, llm_factory=lambda s, **k: llm, progress=progress)
    results = {}
    runner = threading.Thread(
        target=lambda: results.setdefault("run", asyncio.run(compiler.compile_paths([str(note)])))
    )
    runner.start()
    try:
        assert waiting.wait(20), "the run never came to wait for the lock"
        compiler.interrupt()
        runner.join(10)
        assert not runner.is_alive(), "the run went on waiting after it was stopped"
    finally:
        held.release()
        runner.join(10)
    result = results["run"]
    assert result.interrupted and not result.compiled
    assert [f.source for f in result.failed] and "interrupted" in result.failed[0].error
    probe = compile_lock(kb)
    assert probe.acquire(blocking=False), "the stopped run took the lock after all"
    probe.release()
    assert git(kb, "status", "--porcelain").strip() == ""
