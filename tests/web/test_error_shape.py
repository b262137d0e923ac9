"""One error shape everywhere: the JSON API's body, the answer stream's ``error`` event
and MCP's tool error (isError, its structured content) carry the same fields for the
same failure: ok, error (with its hint), status, kind, hint."""

import anyio
import pytest
from mcp import Client

from kb_ai.cli.mcp_server import build_server
from kb_ai.errors import LLMTransientError
from kb_ai.service import Actor, open_kb
from tests.web.conftest import sse

QUESTION = "How long are nightly backups kept?"


@pytest.fixture
def mcp_call(settings, model):
    """Call the MCP `ask` tool in-process, over the same knowledge base and model."""
    okb = open_kb(settings=settings, actor=Actor.agent("test agent"), llm_factory=model.factory)
    server = build_server(okb=okb)

    def call(arguments):
        async def go():
            async with Client(server) as client:
                return await client.call_tool("ask", arguments)

        return anyio.run(go)

    return call


def stream_error(client, body):
    with client.stream("POST", "/api/ask", json=body) as r:
        assert r.status_code == 200, r.read()
        events = list(sse(r))
    kind, data = events[-1]
    assert kind == "error", events
    return data


def test_a_failing_model_is_the_same_error_on_the_stream_and_over_mcp(compiled, model, mcp_call):
    model.handler = lambda *a: LLMTransientError("the model went away")
    streamed = stream_error(compiled, {"question": QUESTION, "save": False})
    result = mcp_call({"question": QUESTION})
    assert result.is_error
    assert result.structured_content == {
        "ok": False,
        "error": result.content[0].text,
        "status": 502,
        "kind": "SelectionError",
        "hint": "try again, or name the pages with --paths",
    }
    assert "the model went away" in result.content[0].text
    # the stream adds only what a chat needs beside it: its session and the model use
    assert set(streamed) - set(result.structured_content) == {"session", "usage"}
    assert {k: streamed[k] for k in result.structured_content} == result.structured_content


def test_a_bad_question_is_the_same_error_on_the_api_and_over_mcp(compiled, mcp_call):
    refused = compiled.post("/api/ask", json={"question": "   "})
    assert refused.status_code == 400
    result = mcp_call({"question": "   "})
    assert result.is_error and result.structured_content == refused.json()
    assert refused.json() == {
        "ok": False,
        "error": result.content[0].text,
        "status": 400,
        "kind": "UsageError",
        "hint": refused.json()["hint"],
    }
    assert refused.json()["error"].startswith("The question is empty (")


def test_a_page_outside_the_wiki_is_the_same_error_on_the_stream_and_over_mcp(compiled, mcp_call):
    paths = ["../../kb-ai.toml"]
    streamed = stream_error(compiled, {"question": "x", "paths": paths, "save": False})
    result = mcp_call({"question": "x", "paths": paths})
    assert result.is_error and result.structured_content["kind"] == "PathEscapeError"
    assert {k: streamed[k] for k in result.structured_content} == result.structured_content
    assert result.structured_content["status"] == 400
    assert result.structured_content["hint"] == "name pages as wiki/<type>/<slug>.md"
