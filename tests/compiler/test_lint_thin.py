"""Lint names the run that compiled an article thinner than its source: an extraction
with no facts or decisions of a source that states many."""

import asyncio

from kb_ai.service import Actor, compiling, linting, open_kb
from tests.compiler.conftest import responder_handler
from tests.fakes.fake_llm import FakeLLM

MEETING = "# Remote control design meeting\n\n" + "\n\n".join(
    [
        "Amara opened the meeting at 10:15 and asked Jonas for the battery figures.",
        "Jonas said the remote control runs on two AA batteries for 14 months.",
        "Wei said a kinetic charger would cost 4 euros more per unit, 12,000 units a year.",
        "Priya reported that 38 customers asked for a backlit keypad in February 2026.",
        "Amara decided to keep the batteries and to ship the backlit keypad in model R2.",
        "Jonas will order 500 samples from Shenzhen Components by 20 March 2026.",
        *(f"Marketing went through slide {i} of the colour study." for i in range(1, 30)),
    ]
)


def thin(stage, messages, schema):
    """A small model that keeps nothing: no facts, no decisions, one vague sentence."""
    reply = responder_handler(stage, messages, schema)
    if stage == "extract":
        vague = "A meeting where the team discusses the design."
        return {**reply, "summary": vague, "facts": [], "decisions": [], "enumerations": []}
    if stage == "write":
        return {**reply, "body": "A meeting where the team discusses the design.\n"}
    return reply


def compile_meeting(kb, settings, tmp_path, handler):
    okb = open_kb(
        settings=settings,
        actor=Actor.cli_user(kb.root),
        llm_factory=lambda s, **k: FakeLLM(handler),
    )
    notes = tmp_path / "notes"
    notes.mkdir(exist_ok=True)
    (notes / "meeting.md").write_text(MEETING, encoding="utf-8")
    result = asyncio.run(compiling.compile_paths(okb, [notes]))
    assert not result.failed
    return okb


def test_lint_lists_the_thin_article_and_the_run_that_compiled_it(kb, settings, tmp_path):
    okb = compile_meeting(kb, settings, tmp_path, thin)
    report = linting.lint(okb)
    (finding,) = [f for f in report.findings if f.check == "thin-article"]
    assert finding.path.startswith("wiki/") and finding.severity == "warning"
    assert "source raw/remote-control-design-meeting.md" in finding.message
    assert "compiled by run 1 (" in finding.message and "commit " in finding.message
    stated, total = (
        int(n) for n in finding.message.split("states ")[1].split(" numbers")[0].split(" of the ")
    )
    assert stated < total / 4 and total >= 8


def test_an_article_that_keeps_its_sources_facts_is_not_listed(kb, settings, tmp_path):
    okb = compile_meeting(kb, settings, tmp_path, responder_handler)
    assert [f for f in linting.lint(okb).findings if f.check == "thin-article"] == []
