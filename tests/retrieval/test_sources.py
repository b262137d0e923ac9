"""A thin article's own source answers: the passage of raw/ is read and cited with its
lines, and only the sources of the pages read are searched."""

import asyncio
from contextlib import closing
from dataclasses import replace

from retrieval import ask
from tests.fakes.fake_llm import FakeLLM
from wiki import (
    Article,
    RawSource,
    build_catalog,
    open_state,
    write_article,
    write_indexes,
    write_raw,
)
from wiki.indexing import refresh_search_index

MEETING = "\n".join(
    [
        "Project Manager: Okay, let's start.",
        "User Interface: {vocalsound} Hmm.",
        *(f"Marketing: Point {i} about the colours of the case." for i in range(30)),
        "Industrial Designer: The remote control runs on two AA batteries.",
        "Industrial Designer: A kinetic charger would cost 4 euros more per unit.",
        "Project Manager: So we keep the batteries.",
        *(f"Marketing: Point {i} about the logo." for i in range(30, 50)),
    ]
)
THIN = "# Design meeting\n\nA meeting where the team discusses the design of the remote control.\n"
OTHER = "Industrial Designer: Wind-up chargers are charged by turning a crank."


def make_wiki(kb):
    for slug, title, text in (("meeting", "Design meeting", MEETING), ("other", "Other", OTHER)):
        write_raw(
            kb, RawSource(slug, title, f"{slug}.txt", "transcript", "c" * 64, "2026-01-01", text)
        )
    write_article(
        kb,
        Article(
            "wiki/meeting/design-meeting.md", "Design meeting", "meeting",
            "A design meeting on the remote control.", [], ["raw/meeting.md"],
            "2026-01-01", "2026-01-01", THIN,
        ),
    )  # fmt: skip
    write_indexes(kb, build_catalog(kb))
    with closing(open_state(kb)) as conn:
        refresh_search_index(kb, conn)


def raw_line(kb, text):
    lines = (kb.root / "raw/meeting.md").read_text(encoding="utf-8").split("\n")
    return next(i for i, line in enumerate(lines, 1) if text in line)


def test_a_thin_articles_source_passage_is_read_and_cited_with_its_lines(kb, settings):
    make_wiki(kb)
    settings = replace(settings, max_hops=0)

    def answering(stage, messages, schema):
        if stage == "select":
            return {"paths": ["wiki/meeting/design-meeting.md"]}
        if stage == "answer":
            prompt = messages[-1]["content"]
            assert "two AA batteries" in prompt  # the source's passage was read
            assert "Point 45 about the logo" not in prompt  # only the passage, not all
            assert "Wind-up" not in prompt  # not a source of the pages read
            return (
                "The remote control runs on two AA batteries "
                "[Design meeting (source)](raw/meeting.md)."
            )
        raise AssertionError(f"no {stage} call expected")

    answer = asyncio.run(
        ask(kb, settings, FakeLLM(answering), "How many batteries does the remote control run on?")
    )
    assert answer.covered is True
    assert "raw/meeting.md" in answer.read and answer.hops[-1].via == "sources"
    at = raw_line(kb, "two AA batteries")
    assert f"(raw/meeting.md#L{at})" in answer.answer
    (claim,) = answer.claims
    assert claim.path == "raw/meeting.md" and claim.supported
    assert [c.path for c in answer.citations] == ["raw/meeting.md"]


def test_no_source_passage_for_a_question_the_source_does_not_answer(kb, settings):
    make_wiki(kb)
    settings = replace(settings, max_hops=0)
    llm = FakeLLM(lambda stage, m, s: {"paths": ["wiki/meeting/design-meeting.md"]})
    answer = asyncio.run(
        ask(kb, settings, llm, "Which lawyer reviewed the remote control's patent filing?")
    )
    assert answer.covered is False and "raw/meeting.md" not in answer.read
    assert "answer" not in llm.stages()
