"""A run that takes a free compile lock reads its first sources and asks for their
extractions before it records itself and settles the wiki (compiler/early.py); the
extract stage takes those calls only when the sources state.db knows are still the ones
they were read against."""

import asyncio
from contextlib import closing

from compiler import Compiler
from compiler._tasks import Interruptible
from compiler.categories import current_categories
from compiler.classify import CatalogRanker
from compiler.early import read_early
from compiler.intake import intake_paths, still_pending
from compiler.mode import choose_mode
from compiler.stages import RunContext, extract_stage
from tests.compiler.conftest import responder_handler
from tests.fakes.fake_llm import FakeLLM
from wiki import all_sources, current_catalog, open_state


def _notes(folder, count, first=0):
    folder.mkdir(exist_ok=True)
    paths = []
    for i in range(first, first + count):
        path = folder / f"n{i}.md"
        path.write_text(f"# Subject {i}\n\nA fact about subject {i}.\n", encoding="utf-8")
        paths.append(path)
    return paths


def test_the_first_extractions_are_asked_for_before_the_run_records_itself(kb, settings, tmp_path):
    runs_when_asked = []

    def handler(stage, messages, schema):
        if stage == "extract":
            with closing(open_state(kb)) as conn:
                runs_when_asked.append(conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
        return responder_handler(stage, messages, schema)

    llm = FakeLLM(handler)
    compiler = Compiler(kb, settings, llm_factory=lambda s, **k: llm)
    notes = _notes(tmp_path / "notes", 3)
    result = asyncio.run(compiler.compile_paths([str(p) for p in notes]))
    assert len(result.compiled) == 3 and not result.failed
    assert llm.stages().count("extract") == 3  # each source asked once
    # the model had the first source before the run recorded itself (it used to be
    # asked after the record, the remote's commits, a killed run settled)
    assert runs_when_asked[0] == 0


def _run_stage(kb, settings, llm, state, count, between=None):
    """read_early for ``count`` sources, ``between`` (a coroutine function), the stage
    with the sources state.db knows then; returns the stage's state."""
    mode = choose_mode(settings, current_categories(kb, settings))

    async def run():
        tasks = Interruptible()
        early = await read_early(llm, mode, tasks, state, count)
        if between is not None:
            await between()
        with closing(open_state(kb)) as conn:
            now = still_pending(state, all_sources(conn), force=False)
        ranker = asyncio.get_running_loop().create_future()
        ranker.set_result(CatalogRanker(current_catalog(kb, None)))
        ctx = RunContext(kb, settings, llm, mode, tasks, lambda *a, **k: None, ranker)
        return await extract_stage(ctx, now, early)

    return asyncio.run(run())


def test_early_calls_are_the_stages_when_nothing_changed_meanwhile(kb, settings, tmp_path):
    notes = _notes(tmp_path / "notes", 3)
    state = intake_paths(kb, notes, settings, force=False, converter=None)
    llm = FakeLLM(responder_handler)
    out = _run_stage(kb, settings, llm, state, 2)
    assert [w.error for w in out.work] == [None, None, None]
    assert all(w.extraction is not None for w in out.work)
    assert llm.stages().count("extract") == 3  # two early, one by the stage


def test_early_calls_are_dropped_when_another_run_committed_meanwhile(kb, settings, tmp_path):
    notes = _notes(tmp_path / "notes", 3)
    state = intake_paths(kb, notes, settings, force=False, converter=None)
    llm = FakeLLM(responder_handler)
    other = _notes(tmp_path / "other", 1, first=9)

    async def another_run():  # another writer's compile, after this run's intake
        compiler = Compiler(kb, settings, llm_factory=lambda s, **k: llm)
        result = await compiler.compile_paths([str(p) for p in other])
        assert result.compiled

    out = _run_stage(kb, settings, llm, state, 2, between=another_run)
    assert [w.error for w in out.work] == [None, None, None]
    # 2 early (dropped: read against the sources known before the other run), the
    # other run's 1, and the stage's own 3
    assert llm.stages().count("extract") == 6


def test_a_source_read_early_that_cannot_be_read_is_reported_as_the_stage_would(
    kb, settings, tmp_path
):
    notes = _notes(tmp_path / "notes", 2)
    binary = tmp_path / "notes" / "blob.md"
    binary.write_bytes(b"\x00\x01\x02binary\xff" * 50)
    state = intake_paths(kb, [binary, *notes], settings, force=False, converter=None)
    llm = FakeLLM(responder_handler)
    early_run = _run_stage(kb, settings, llm, state, 3)  # the blob read early
    late_run = _run_stage(kb, settings, FakeLLM(responder_handler), state, 0)  # by the stage
    for out in (early_run, late_run):
        assert [f.source for f in out.result.failed] == [str(binary)]
        assert [w.error for w in out.work] == [None, None]
    assert early_run.result.failed == late_run.result.failed
    assert llm.stages().count("extract") == 2  # the blob never reached the model
