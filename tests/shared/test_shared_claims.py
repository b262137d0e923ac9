"""Two servers given one document at once (a folder both compile, one text uploaded to
each) extract it once: the run that finds the text claimed by the other does not send
it to the model ahead of the lock, and under the lock its requests are answered from
the response cache the other filled (compiler/claims.py)."""

import asyncio
from dataclasses import replace

from compiler.run import compile_run
from kb_ai.service import open_kb
from tests.fakes.kb_responder import respond, stage_of
from tests.fakes.openai_server import FakeOpenAIServer
from wiki import list_articles

NOTE = "# Release train\n\nReleases leave every Tuesday at 10:00 from the main branch.\n"


def slow(request):
    return replace(respond(request), delay=0.5)  # both runs' calls would overlap


def _open(kb, model):
    overrides = {
        "model": "openai/fake-model",
        "api_base": model.base_url,
        "api_key": "sk-test",
        "transport": "http",
        "retry_backoff": 0.001,
    }
    return open_kb(kb.root, overrides=overrides, detect=False)


def test_two_servers_compiling_one_document_at_once_extract_it_once(shared, second, tmp_path):
    note = tmp_path / "release.md"
    note.write_text(NOTE, encoding="utf-8")
    with FakeOpenAIServer(slow) as model:
        here, there = _open(shared, model), _open(second, model)

        async def both():
            return await asyncio.gather(
                compile_run(here.kb, here.settings, [note], llm_factory=here.llm_factory),
                compile_run(there.kb, there.settings, [note], llm_factory=there.llm_factory),
            )

        first, other = asyncio.run(both())
        extracts = [r for r in model.requests if stage_of(r) == "extract"]
    assert len(extracts) == 1  # one paid extraction for the one text
    for result, kb in ((first, shared), (other, second)):
        assert not result.failed, result.failed
        assert result.created == ["wiki/concept/release-train.md"]  # each server's tree
        assert list_articles(kb) == ["wiki/concept/release-train.md"]


def test_a_claim_of_a_run_that_died_frees_itself(shared):
    """A claim not renewed (its run was killed) holds no one up past its expiry."""
    from compiler.claims import ExtractionClaims

    dead = ExtractionClaims.of(shared)
    waiting = ExtractionClaims.of(shared)

    async def run():
        assert await dead.take("text-1", wait=False)
        dead.held.clear()  # killed: it renews and drops nothing any more
        assert not await waiting.take("text-1", wait=False)
        with dead.db.connection() as conn:  # its last renewal long ago
            conn.execute("UPDATE extract_claims SET expires = now() - interval '1 second'")
        assert await waiting.take("text-1", wait=False)
        await waiting.close()
        await dead.close()

    asyncio.run(run())


def test_a_run_interrupted_while_it_waits_for_another_runs_claim_sends_nothing(
    shared, settings, tmp_path
):
    """Under the lock a run waits for the run extracting the same text; stopped while
    it waits, it does not send the text after all, and says the source was interrupted
    (it compiles next time)."""
    import hashlib
    from types import SimpleNamespace

    from compiler.categories import current_categories
    from compiler.claims import ExtractionClaims, claim_key
    from compiler.mode import choose_mode
    from compiler.run import Compiler
    from tests.compiler.conftest import responder_handler
    from tests.fakes.fake_llm import FakeLLM

    note = tmp_path / "release.md"
    note.write_text(NOTE, encoding="utf-8")
    mode = choose_mode(settings, current_categories(shared, settings))
    text = SimpleNamespace(checksum=hashlib.sha256(NOTE.encode()).hexdigest())  # the file's
    other = ExtractionClaims.of(shared)  # a run extracting it ahead of the lock
    llm = FakeLLM(responder_handler)
    compiler = Compiler(shared, settings, llm_factory=lambda s, **k: llm)

    async def stopped_while_waiting():
        assert await other.take(claim_key(text, settings.model, mode), wait=False)
        try:
            run = asyncio.ensure_future(compiler.compile_paths([str(note)]))
            await asyncio.sleep(1.0)  # long past its first look at the claim (0.25 s polls)
            assert not run.done() and llm.calls == []  # waiting for the other run
            compiler.interrupt()
            return await run
        finally:
            await other.close()

    result = asyncio.run(stopped_while_waiting())
    assert llm.calls == []  # the text was not sent
    assert result.interrupted and not result.created
    assert [f.error for f in result.failed] == ["interrupted before it finished"]


def test_a_claim_wait_stopped_by_the_run_does_not_ask_the_model(shared, settings):
    """The wait for another run's claim ends when the run is stopped (its ``stopped``),
    not only when its task is cancelled: the extraction then ends as interrupted, the
    model not asked and the other run's claim left alone."""
    from compiler._tasks import Interruptible
    from compiler.categories import current_categories
    from compiler.claims import ExtractionClaims, claim_key
    from compiler.mode import choose_mode
    from compiler.sources import source_from_text
    from compiler.stages import RunContext, _extract_claimed
    from tests.compiler.conftest import responder_handler
    from tests.fakes.fake_llm import FakeLLM

    src = source_from_text("release", "Release train", NOTE, chunk_chars=24_000, max_bytes=10**6)
    mode = choose_mode(settings, current_categories(shared, settings))
    other = ExtractionClaims.of(shared)
    llm = FakeLLM(responder_handler)

    async def run():
        assert await other.take(claim_key(src, settings.model, mode), wait=False)
        tasks = Interruptible()
        ctx = RunContext(shared, settings, llm, mode, tasks, lambda *a, **k: None,
                         asyncio.get_running_loop().create_future(),
                         claims=ExtractionClaims.of(shared))  # fmt: skip
        waiting = asyncio.ensure_future(_extract_claimed(ctx, src))  # not one of tasks'
        await asyncio.sleep(0.6)
        assert not waiting.done()
        tasks.interrupt()  # the run stopped: it cancels its own tasks, not this one
        await asyncio.wait([waiting], timeout=5)
        assert waiting.done() and waiting.cancelled()  # ended as interrupted
        assert not await ExtractionClaims.of(shared).take(  # still the other's
            claim_key(src, settings.model, mode), wait=False
        )
        await ctx.claims.close()
        await other.close()

    asyncio.run(run())
    assert llm.calls == []
