"""What each stage tells the cache about the replies it got (accept or reject), through
the fake of our own LLM boundary, which records those verdicts as the real client's
cache would see them; and the same through the real client and its state.db."""

import asyncio
import json
import sqlite3

import pytest

from compiler.classify import CatalogRanker, classify_source
from compiler.extract import Extraction
from compiler.run import PROMPTS
from kb_ai.errors import LLMOutputError
from kb_ai.llm import open_llm
from kb_ai.settings import Settings
from retrieval import ask
from tests.fakes.fake_llm import FakeLLM
from tests.fakes.faulty_server import ESCAPE, FaultyModel, faulty_server
from tests.retrieval.test_ask import BACKUP, DNS, make_wiki


def classify(llm):
    extraction = Extraction(title="Backups", summary="Backups run nightly.", facts=["At 02:00."])
    return asyncio.run(
        classify_source(
            llm,
            PROMPTS,
            source_title="Backups",
            extraction=extraction,
            ranker=CatalogRanker([]),
            categories=["concept"],
            budget_chars=4000,
        )
    )


def test_classify_accepts_a_usable_reply_and_rejects_an_escaping_one():
    good = {"articles": [{"action": "create", "path": "", "type": "concept", "title": "Backups"}]}
    bad = {"articles": [{"action": "update", "path": ESCAPE, "type": "concept", "title": "x"}]}
    llm = FakeLLM().enqueue(good, bad)
    assert classify(llm)[0].path == "wiki/concept/backups.md"
    with pytest.raises(LLMOutputError, match="outside wiki/"):
        classify(llm)
    assert [c.verdict for c in llm.calls] == ["accepted", "rejected"]


def test_a_field_far_over_its_bound_is_refused_by_the_fake_as_by_the_client():
    huge = {"articles": [{"action": "create", "path": "", "type": "concept", "title": "x" * 500}]}
    with pytest.raises(LLMOutputError, match=r"articles\[0\].title is 500 characters"):
        classify(FakeLLM().enqueue(huge))


def test_ask_accepts_what_it_answered_from_and_rejects_a_selection_of_invented_paths(kb, settings):
    make_wiki(kb, [DNS, BACKUP])
    llm = FakeLLM().enqueue(
        {"paths": ["wiki/howto/backups.md"]},
        "Backups run nightly at 02:00 [Backups](wiki/howto/backups.md).",
    )
    answer = asyncio.run(ask(kb, settings, llm, "When do backups run?"))
    assert answer.citations and [c.verdict for c in llm.calls] == ["accepted", "accepted"]

    llm = FakeLLM().enqueue({"paths": [ESCAPE, "wiki/nope/invented.md"]})
    answer = asyncio.run(ask(kb, settings, llm, "When do backups run?"))
    assert not answer.covered and [c.verdict for c in llm.calls] == ["rejected"]


def test_an_empty_answer_is_rejected(kb, settings):
    make_wiki(kb, [DNS, BACKUP])
    llm = FakeLLM().enqueue({"paths": ["wiki/howto/backups.md"]}, "   ")
    with pytest.raises(LLMOutputError, match="empty answer"):
        asyncio.run(ask(kb, settings, llm, "When do backups run?"))
    assert [c.verdict for c in llm.calls] == ["accepted", "rejected"]


def test_a_selection_of_escaping_paths_is_asked_again_next_time(kb, tmp_path):
    """Through the real client and state.db: the refused selection is not replayed."""
    make_wiki(kb, [DNS, BACKUP])
    model = FaultyModel("escape", stages={"select"}, times=1)
    with faulty_server(model) as server:
        settings = Settings(
            kb_dir=kb.root, model="openai/fake-model", api_base=server.base_url, api_key="k"
        )

        async def one():
            async with open_llm(settings, db_path=kb.state_db) as llm:
                return await ask(kb, settings, llm, "When do the nightly backups run?")

        first = asyncio.run(one())
        second = asyncio.run(one())
        third = asyncio.run(one())
    assert not first.covered and second.covered and second.citations
    selections = [r for r in server.requests if "paths" in json.dumps(r.get("response_format"))]
    assert len(selections) == 2  # the escaping one, then a fresh one; the third was cached
    assert third.answer == second.answer
    with sqlite3.connect(kb.state_db) as conn:
        cached = [row[0] for row in conn.execute("SELECT text FROM llm_cache")]
    assert not any(ESCAPE in text for text in cached)


def test_a_checked_block_accepts_rejects_or_when_cancelled_decides_nothing():
    from kb_ai.llm.types import Completion, Usage

    class Verdicts:
        def __init__(self):
            self.said = []

        def accept(self):
            self.said.append("accepted")

        def reject(self):
            self.said.append("rejected")

    verdicts = Verdicts()
    reply = Completion("{}", {}, "m", Usage(), False, "stop", 0.1, receipt=verdicts)
    with reply.checked() as checked:
        assert checked is reply
    with pytest.raises(LLMOutputError, match="no article"), reply.checked():
        raise LLMOutputError("classification named no article")
    with pytest.raises(asyncio.CancelledError), reply.checked():
        raise asyncio.CancelledError

    assert verdicts.said == ["accepted", "rejected"]
