"""The MCP `ask` tool's structured result, in-process (the SDK's own client connected to
the server object): the answer with what its checks removed and why."""

import asyncio

import anyio
import pytest
from mcp import Client

from kb_ai.cli.mcp_server import build_server
from kb_ai.service import Actor, compiling, open_kb
from tests.fakes.fake_llm import FakeLLM
from tests.kb_ai.test_service import NOTE, respond

BACKUPS = "wiki/concept/nightly-backups.md"
INVENTED = "Each copy costs 4,000 euros a month."


def answering(stage, messages, schema):
    """The stand-in model, answering with one sentence the page holds and one it does not."""
    if stage == "answer":
        return f"Backup copies are kept for thirty days [Nightly backups]({BACKUPS}). {INVENTED}"
    return respond(stage, messages, schema)


@pytest.fixture
def okb(kb, settings, tmp_path):
    """The backups note compiled, through the service, with the stand-in above."""
    okb = open_kb(
        settings=settings,
        actor=Actor.agent("test agent"),
        llm_factory=lambda s, **k: FakeLLM(answering),
    )
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "backups.md").write_text(NOTE, encoding="utf-8")
    assert not asyncio.run(compiling.compile_paths(okb, [notes])).failed
    return okb


def test_the_structured_result_carries_the_checks_findings(okb):

    async def go():
        async with Client(build_server(okb=okb)) as client:
            tool = next(t for t in (await client.list_tools()).tools if t.name == "ask")
            return tool, await client.call_tool("ask", {"question": "How long are backups kept?"})

    tool, result = anyio.run(go)
    assert not result.is_error
    data = result.structured_content
    assert "4,000" not in data["answer"] and "4,000" not in result.content[0].text
    assert "thirty days" in data["answer"] and data["covered"] is True
    grounding = [f for f in data["findings"] if f["check"] == "grounding"]
    assert grounding and "4,000" in grounding[0]["claim"] + grounding[0]["detail"]
    assert set(grounding[0]) == {"check", "detail", "claim", "path"}
    assert "findings" in tool.output_schema["required"]
    # each cited claim comes with the lines of the page that support it
    (claim,) = data["claims"]
    assert claim["path"] == BACKUPS and claim["supported"] is True
    lines = (okb.root / BACKUPS).read_text(encoding="utf-8").split("\n")
    span = claim["span"]
    assert "thirty days" in "\n".join(lines[span["start"] - 1 : span["end"]]) == span["text"]
    assert f"({BACKUPS}#L{span['start']}" in data["answer"]
    assert data["faithfulness"] == 1.0 and data["see_also"] == []
    assert {"claims", "faithfulness", "see_also"} <= set(tool.output_schema["required"])


def test_a_question_not_covered_names_its_nearby_pages_in_the_structured_result(okb):

    async def go():
        async with Client(build_server(okb=okb)) as client:
            # shares "backups" with the page, but the page says nothing of who restores them
            return await client.call_tool(
                "ask", {"question": "Which engineer restores backups for the payments team?"}
            )

    data = anyio.run(go).structured_content
    assert data["covered"] is False and data["claims"] == [] and data["faithfulness"] is None
    assert data["see_also"] == [{"title": "Nightly backups", "path": BACKUPS}]
