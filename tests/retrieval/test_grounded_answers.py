"""Answers that abstain and are checked: stand-in models that answer from outside
knowledge, invent numbers, cite the wrong page or pick unrelated pages, and what the
user gets instead (issue 13)."""

import asyncio
from dataclasses import replace

import pytest

from retrieval import NOT_COVERED, Asker, ask
from retrieval.checks import LEFT_OUT
from tests.fakes.fake_llm import FakeLLM
from tests.retrieval import unplaced
from tests.retrieval.test_ask import BACKUP, DNS, make_wiki

CAPEX = (
    "wiki/decision/capital-budget.md",
    "Capital budget",
    "How the capital budget for servers is approved.",
    "Capital spending on servers over 5,000 EUR is approved by Dana in the quarterly review.\n",
)
RAILWAY = (
    "wiki/reference/chengdu-chongqing-railway.md",
    "成渝高速铁路",
    "成渝高速铁路的线路概况。",
    "成渝高速铁路全长308公里，设计速度为每小时350公里，2015年12月开通运营。\n",
)
SEPARATE = (
    "wiki/howto/backup-account.md",
    "Backup account",
    "Where backup copies are stored.",
    "Backup copies are stored in a separate cloud account that only the platform team can read.\n",
)


@pytest.fixture
def settings(settings):
    # One reading round: the stand-in's replies are scripted call by call. The checks
    # see the pages read whichever round read them.
    return replace(settings, max_hops=0)


def run(coro):
    return asyncio.run(coro)


def events_of(kb, settings, llm, question):
    async def collect():
        return [e async for e in Asker(kb, settings, llm).events(question)]

    return run(collect())


def shown(events):
    """What a user watching the stream saw."""
    return "".join(e.text for e in events if e.type == "delta")


def test_a_question_no_page_shares_a_word_with_is_declined_without_a_model_call(kb, settings):
    make_wiki(kb, [DNS, BACKUP])
    llm = FakeLLM().enqueue(
        {"paths": [DNS[0]]},
        "The capital of Mongolia is Ulaanbaatar [DNS](wiki/decision/dns-out-of-puppet.md).",
    )
    answer = run(ask(kb, settings, llm, "What is the capital of Mongolia?"))
    assert llm.calls == []  # the outside-knowledge answer was never asked for
    assert answer.answer.startswith(NOT_COVERED) and not answer.covered
    assert answer.citations == [] and answer.read == []
    assert [f.check for f in answer.findings] == ["coverage"]


def test_question_words_alone_do_not_make_a_page_relevant(kb, settings):
    # every page says "what", "when" and "how"; none says anything about Mongolia
    make_wiki(kb, [(p, t, s, b + "What we do, when and how.\n") for p, t, s, b in (DNS, BACKUP)])
    llm = FakeLLM()
    answer = run(ask(kb, settings, llm, "What is the capital of Mongolia and when was it founded?"))
    assert llm.calls == [] and not answer.covered


def test_a_chinese_question_about_a_page_never_compiled_is_declined_without_a_selection(
    kb, settings
):
    make_wiki(kb, [DNS, BACKUP])
    # the wiki is English: search terms in English are asked for once; none is in it
    llm = FakeLLM().enqueue({"terms": ["Beijing-Shanghai high-speed railway", "length"]})
    answer = run(ask(kb, settings, llm, "京沪高铁有多长？"))
    assert len(llm.calls) == 1 and "terms" in llm.calls[0].schema["properties"]
    assert answer.answer.startswith(NOT_COVERED) and not answer.covered


def test_selected_pages_that_share_no_word_with_the_question_are_not_read(kb, settings):
    make_wiki(kb, [DNS, BACKUP, CAPEX])  # "capital" makes the question worth a selection
    llm = FakeLLM().enqueue(
        {"paths": [DNS[0], BACKUP[0]]},
        "The capital of Mongolia is Ulaanbaatar [DNS](wiki/decision/dns-out-of-puppet.md).",
    )
    answer = run(ask(kb, settings, llm, "What is the capital of Mongolia?"))
    assert llm.stages() == ["select"]  # nothing related was picked: no answer call
    assert answer.answer.startswith(NOT_COVERED) and not answer.covered and answer.read == []
    assert {f.path for f in answer.findings if f.check == "selection"} == {DNS[0], BACKUP[0]}


def test_an_outside_knowledge_answer_citing_an_unrelated_page_is_not_given(kb, settings):
    make_wiki(kb, [DNS, BACKUP, CAPEX])
    llm = FakeLLM().enqueue(
        {"paths": [CAPEX[0]]},
        "The capital of Mongolia is Ulaanbaatar [Capital budget](wiki/decision/capital-budget.md).",
    )
    # the evidence gate (coverage.py) off: the answer's own checks catch it too
    ungated = replace(settings, coverage_threshold=0.0)
    events = events_of(kb, ungated, llm, "What is the capital of Mongolia?")
    done = events[-1].as_dict()
    assert "Ulaanbaatar" not in shown(events) and "Ulaanbaatar" not in done["answer"]
    assert done["answer"].startswith(NOT_COVERED) and done["covered"] is False
    assert done["citations"] == []
    grounding = [f for f in done["findings"] if f["check"] == "grounding"]
    assert grounding and "Ulaanbaatar" in grounding[0]["detail"]


def test_an_invented_number_never_reaches_the_user(kb, settings):
    make_wiki(kb, [DNS, RAILWAY])
    llm = FakeLLM().enqueue(
        {"paths": [RAILWAY[0]]},
        "成渝高速铁路全长约1000公里 [成渝高速铁路](wiki/reference/chengdu-chongqing-railway.md)。",
    )
    events = events_of(kb, settings, llm, "成渝高速铁路有多长？")
    done = events[-1].as_dict()
    assert "1000" not in shown(events) and "1000" not in done["answer"]
    assert done["answer"].startswith(NOT_COVERED) and done["covered"] is False
    assert any("1000" in f["detail"] for f in done["findings"])


def test_the_grounded_part_of_an_answer_stays_and_the_rest_is_said_to_be_left_out(kb, settings):
    make_wiki(kb, [DNS, RAILWAY])
    page = "[成渝高速铁路](wiki/reference/chengdu-chongqing-railway.md)"
    llm = FakeLLM().enqueue(
        {"paths": [RAILWAY[0]]},
        f"成渝高速铁路全长308公里 {page}。它每年运送约5000万名乘客 {page}。",
    )
    events = events_of(kb, settings, llm, "成渝高速铁路有多长？")
    done = events[-1].as_dict()
    assert "308公里" in done["answer"] and "5000" not in done["answer"]
    assert done["answer"].endswith(LEFT_OUT) and done["covered"] is True
    assert done["citations"] == [{"title": RAILWAY[1], "path": RAILWAY[0]}]
    assert shown(events).strip() == done["answer"]  # what streamed is what was kept


def test_a_citation_of_the_wrong_page_is_moved_to_the_page_that_says_it(kb, settings):
    make_wiki(kb, [DNS, BACKUP, SEPARATE])
    llm = FakeLLM().enqueue(
        {"paths": [DNS[0], SEPARATE[0]]},
        "Backup copies are stored in a separate cloud account "
        "[DNS out of puppet](wiki/decision/dns-out-of-puppet.md).",
    )
    answer = run(ask(kb, settings, llm, "Where are backup copies stored?"))
    assert "dns-out-of-puppet" not in answer.answer
    assert "[Backup account](wiki/howto/backup-account.md)" in unplaced(answer.answer)
    assert [c.path for c in answer.citations] == [SEPARATE[0]] and answer.covered
    assert any(f.check == "citation" and f.path == DNS[0] for f in answer.findings)


def test_a_claim_whose_citation_no_page_read_supports_is_left_out(kb, settings):
    make_wiki(kb, [DNS, BACKUP, SEPARATE])
    llm = FakeLLM().enqueue(
        {"paths": [DNS[0], BACKUP[0]]},
        "Puppet runs were slow [DNS out of puppet](wiki/decision/dns-out-of-puppet.md). "
        "Backups are encrypted at rest [DNS out of puppet](wiki/decision/dns-out-of-puppet.md).",
    )
    answer = run(ask(kb, settings, llm, "Why did DNS move, and are backups encrypted?"))
    assert answer.answer.count("dns-out-of-puppet.md") == 1  # the first claim keeps its page
    assert "encrypted" not in answer.answer and answer.answer.endswith(LEFT_OUT)
    assert [c.path for c in answer.citations] == [DNS[0]] and answer.covered
    assert [f.check for f in answer.findings] == ["citation", "grounding"]


def test_a_one_word_outside_answer_is_not_given(kb, settings):
    make_wiki(kb, [DNS, BACKUP, CAPEX])
    llm = FakeLLM().enqueue(
        {"paths": [CAPEX[0]]}, "Ulaanbaatar [Capital budget](wiki/decision/capital-budget.md)."
    )
    answer = run(ask(kb, settings, llm, "What is the capital of Mongolia?"))
    assert answer.answer.startswith(NOT_COVERED) and not answer.covered and answer.citations == []
    uncited = FakeLLM().enqueue({"paths": [CAPEX[0]]}, "Ulaanbaatar.")
    answer = run(ask(kb, settings, uncited, "What is the capital of Mongolia?"))
    assert answer.answer.startswith(NOT_COVERED) and not answer.covered


def test_an_answer_that_says_nothing_is_not_covered_and_never_shown(kb, settings):
    make_wiki(kb, [DNS, BACKUP, CAPEX])
    llm = FakeLLM().enqueue({"paths": [CAPEX[0]]}, "OK. Sure!")
    events = events_of(kb, settings, llm, "What is the capital of Mongolia?")
    assert (
        events[-1].as_dict()["answer"].startswith(NOT_COVERED)
        and events[-1].as_dict()["covered"] is False
    )
    assert shown(events).startswith(NOT_COVERED)


def test_a_local_model_picking_a_sentence_gets_only_its_page_cited(kb, settings):
    make_wiki(kb, [DNS, BACKUP])
    local = replace(settings, model="local/default")
    llm = FakeLLM().enqueue({"paths": [DNS[0], BACKUP[0]]}, {"sentences": ["s1"]})
    answer = run(ask(kb, local, llm, "When do backups run?"))
    assert [c.path for c in answer.citations] == [BACKUP[0]]
    assert answer.answer.startswith("Backups run nightly at 02:00")


def test_a_local_model_naming_no_offered_sentence_is_not_covered(kb, settings):
    make_wiki(kb, [DNS, BACKUP])
    local = replace(settings, model="local/default")
    llm = FakeLLM().enqueue({"paths": [BACKUP[0]]}, {"sentences": ["s90"]})
    answer = run(ask(kb, local, llm, "How long are backups kept?"))
    assert "90" not in answer.answer and answer.answer.startswith(NOT_COVERED)
    assert not answer.covered and answer.citations == []


def test_a_faithful_answer_passes_the_checks_unchanged(kb, settings):
    make_wiki(kb, [DNS, BACKUP])
    text = (
        "Backups run nightly at 02:00 [Backups](wiki/howto/backups.md). "
        "They are kept for 30 days [Backups](wiki/howto/backups.md)."
    )
    llm = FakeLLM().enqueue({"paths": [BACKUP[0]]}, text)
    events = events_of(kb, settings, llm, "When do backups run and how long are they kept?")
    done = events[-1].as_dict()
    assert unplaced(done["answer"]) == text and done["findings"] == [] and done["covered"] is True
    assert shown(events) == done["answer"]  # what was streamed is the answer


def test_a_code_span_with_an_ellipsis_reaches_the_reader_as_written(kb, settings):
    """The tidying after a citation closed " ..." to "..." inside code: the answer said
    `SELECT... FOR UPDATE SKIP LOCKED`, an identifier no page has, and was left out."""
    queue = (
        "wiki/decision/queue.md",
        "Job queue",
        "How workers claim jobs.",
        "Workers claim jobs with `SELECT ... FOR UPDATE SKIP LOCKED` on the jobs table.\n",
    )
    make_wiki(kb, [queue, BACKUP])
    text = (
        "Workers claim jobs with `SELECT ... FOR UPDATE SKIP LOCKED` "
        "[Job queue](wiki/decision/queue.md) ."
    )
    llm = FakeLLM().enqueue({"paths": [queue[0]]}, text)
    events = events_of(kb, settings, llm, "How do workers claim jobs?")
    done = events[-1].as_dict()
    assert unplaced(done["answer"]) == (
        "Workers claim jobs with `SELECT ... FOR UPDATE SKIP LOCKED` [Job queue](wiki/decision/queue.md)."
    ), done
    assert done["findings"] == [] and done["faithfulness"] == 1.0


def test_a_written_sentence_that_cites_nothing_is_given_the_page_and_lines_that_state_it(
    kb, settings
):
    """Every sentence of an answer names where a reader can check it: a model that wrote
    a sentence without a citation gets the page read that states it, with its lines."""
    make_wiki(kb, [DNS, BACKUP])
    text = (
        "Backups of the database run nightly at 02:00. "
        "They are kept for 30 days [Backups](wiki/howto/backups.md)."
    )
    llm = FakeLLM().enqueue({"paths": [BACKUP[0], DNS[0]]}, text)
    events = events_of(kb, settings, llm, "When do backups run and how long are they kept?")
    done = events[-1].as_dict()
    first, second = done["claims"]
    assert first["claim"] == "Backups of the database run nightly at 02:00"
    assert first["path"] == BACKUP[0] and first["supported"] and second["supported"]
    assert done["answer"].startswith(
        f"Backups of the database run nightly at 02:00 [Backups]({BACKUP[0]}#L"
    ), done["answer"]
    assert shown(events) == done["answer"] and done["faithfulness"] == 1.0
