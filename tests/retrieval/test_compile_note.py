"""An answer given while a compile is changing the wiki says so, and names the stage."""

import asyncio
import os
from contextlib import closing

import pytest

from retrieval import Asker, EmptyWikiError, ask
from tests.fakes.fake_llm import FakeLLM
from tests.retrieval.test_ask import BACKUP, make_wiki
from wiki import finish_run, open_state, set_run_stage, start_run


def notes(kb, settings):
    llm = FakeLLM(lambda stage, m, s: {"paths": [BACKUP[0]]} if stage == "select"
                  else "Backups run nightly at 02:00 [Backups](wiki/howto/backups.md).")  # fmt: skip

    async def go():
        return [e for e in [e async for e in Asker(kb, settings, llm).events("When?")]]

    events = asyncio.run(go())
    assert events[-1].type == "done"
    return [e.text for e in events if e.type == "note"]


def test_an_answer_during_a_compile_says_the_wiki_is_changing(kb, settings):
    make_wiki(kb, [BACKUP])
    assert notes(kb, settings) == []
    with closing(open_state(kb)) as conn:
        run = start_run(conn, "cli", 4, os.getpid())
        set_run_stage(conn, run, "write", 2, 3)
    [note] = notes(kb, settings)
    assert "compile is changing the wiki" in note and "write 2/3" in note
    with closing(open_state(kb)) as conn:
        finish_run(conn, run, "done", {}, None)
        start_run(conn, "agent hook", 1, 2**22 + 12345)  # its process is gone: not under way
    assert notes(kb, settings) == []


def test_a_question_before_the_first_compile_ends_is_told_it_is_running(kb, settings):
    llm = FakeLLM(lambda stage, m, s: "unused")
    with pytest.raises(EmptyWikiError) as nothing_yet:
        asyncio.run(ask(kb, settings, llm, "When?"))
    assert "compile some notes first" in nothing_yet.value.hint
    with closing(open_state(kb)) as conn:
        set_run_stage(conn, start_run(conn, "cli", 4, os.getpid()), "extract", 1, 4)
    with pytest.raises(EmptyWikiError) as coming:
        asyncio.run(ask(kb, settings, llm, "When?"))
    assert "a compile is running" in coming.value.hint and "compile some" not in coming.value.hint
    assert llm.calls == []  # nothing asked of the model before there is a page
