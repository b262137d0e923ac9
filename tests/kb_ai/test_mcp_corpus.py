"""The MCP `ask` tool's optional `corpus`, through the SDK's own client over both
transports (`kb-ai mcp` as a child process, and streamable HTTP served by uvicorn),
against a wiki compiled with the stand-in model server."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner
from mcp import ClientSession

from kb_ai.cli import main
from tests.conftest import compile_notes
from tests.kb_ai import test_mcp
from tests.kb_ai.test_cli_corpus import BACKUPS, LEASES, NOTES, RETRIES
from tests.kb_ai.test_mcp import TOKEN, over_http, over_stdio, serving, web_app
from wiki import KnowledgeBase

model = test_mcp.model  # the stand-in model server, with its environment (a fixture)


@pytest.fixture
def kb(tmp_path, model):
    kb = KnowledgeBase.init(tmp_path / "kb")
    compile_notes(kb, NOTES, tmp_path)
    built = CliRunner().invoke(
        main, ["--kb", str(kb.root), "corpus", "build", "decisions", "--type", "decision"]
    )
    assert built.exit_code == 0, built.output
    return kb


@pytest.fixture(params=["stdio", "http"])
def call(request, kb, model):
    if request.param == "stdio":
        yield lambda check: over_stdio(kb.root, model.env, check)
        return
    with serving(web_app(kb.root, TOKEN)) as url:
        yield lambda check: over_http(url, check)


def asking(**args: Any):
    async def check(session: ClientSession):
        return await session.call_tool("ask", args)

    return check


def tool_schema():
    async def check(session: ClientSession):
        (tool,) = (await session.list_tools()).tools
        return tool

    return check


def test_ask_with_a_corpus_answers_from_it_only(call):
    tool = call(tool_schema())
    assert "corpus" in tool.input_schema["properties"] and "corpus" in tool.description
    result = call(asking(question="What recurs for the worker?", corpus="decisions"))
    assert not result.is_error, result.content[0].text
    data = result.structured_content
    assert data["corpus"] == {"name": "decisions", "read_whole": True, "articles": 3}
    assert {c["path"] for c in data["citations"]} == {RETRIES, LEASES}
    assert BACKUPS not in data["read"]
    text = result.content[0].text
    assert f"- [Worker retries]({RETRIES})" in text.split("Sources:")[1]
    outside = call(asking(question="How long are backup copies kept?", corpus="decisions"))
    assert outside.structured_content["citations"] == []
    assert "does not cover" in outside.content[0].text


def test_an_unknown_corpus_is_a_tool_error_listing_the_corpora(call):
    result = call(asking(question="Why did DNS move?", corpus="nope"))
    assert result.is_error
    assert "No corpus 'nope'" in result.content[0].text
    assert "corpora: decisions" in result.content[0].text
    assert result.structured_content["status"] == 404
    assert result.structured_content["kind"] == "NotFoundError"
