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
