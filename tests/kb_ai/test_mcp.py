"""The MCP `ask` tool through the SDK's own client, over stdio (`kb-ai mcp` as a child
process) and streamable HTTP (mounted at /mcp behind the token rule, served by uvicorn on
loopback), answering from a wiki compiled against the fake model server."""

from __future__ import annotations

import contextlib
import hmac
import os
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from click.testing import CliRunner
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from kb_ai.cli import main
from kb_ai.cli.mcp_server import http_app
from tests.conftest import compile_notes
from tests.fakes.kb_responder import respond
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from wiki import KnowledgeBase

NOTES = {
    "dns.md": "# DNS out of puppet\n\nWe decided to move DNS records out of the puppet module "
    "into Terraform. Puppet runs took twenty minutes for every record change.\n",
    "backups.md": "# Nightly backups\n\nBackups of the main database run nightly at 02:00. "
    "Backup copies are kept for thirty days in a separate account.\n",
}
BACKUPS = "wiki/concept/nightly-backups.md"
TOKEN = "s3cret-token"


@pytest.fixture
def model(monkeypatch):
    with FakeOpenAIServer(respond) as server:
        env = {
            "KB_AI_MODEL": "openai/fake-model",
            "KB_AI_API_BASE": server.base_url,
            "KB_AI_API_KEY": "sk-test",
            "KB_AI_RETRY_BACKOFF": "0.01",
            "KB_AI_MAX_RETRIES": "0",
            # `kb-ai mcp` runs as a child with only this environment: the code under test
            # (a checkout named by PYTHONPATH), not whichever one is installed
            **({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}),
        }
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        server.env = env
        yield server


@pytest.fixture
def kb(tmp_path, model):
    kb = KnowledgeBase.init(tmp_path / "kb")
    compile_notes(kb, NOTES, tmp_path)
    return kb


# -- the two transports --------------------------------------------------------------

Check = Callable[[ClientSession], Awaitable[Any]]


def over_stdio(kb_root, env: dict[str, str], check: Check) -> Any:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "kb_ai", "mcp", "--kb", str(kb_root)], env=env
    )

    async def go() -> Any:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await check(session)

    return anyio.run(go)


class TokenRule:
    """A stand-in for web/auth.py's GuardMiddleware while that module is not in the tree:
    with KB_AI_TOKEN set, every request needs `Authorization: Bearer <token>`; without
    one, only loopback clients get in."""

    def __init__(self, app: ASGIApp, *, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._allowed(scope):
            response = JSONResponse({"ok": False, "error": "token required", "status": 401}, 401)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _allowed(self, scope: Scope) -> bool:
        if not self.token:
            return (scope.get("client") or ("",))[0] in ("127.0.0.1", "::1")
        header = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
        scheme, _, given = header.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(
            given.encode(), self.token.encode()
        )


try:  # the server's own token rule, once the web app is in the tree
    from web.auth import GuardMiddleware as Guard
except ImportError:
    Guard = TokenRule


def web_app(kb_root, token: str | None, *, guard: bool = True, **options: Any) -> ASGIApp:
    """/mcp mounted the way `kb-ai serve` mounts it: a Route, its lifespan entered in the
    parent's, behind the token guard."""
    mcp = http_app(str(kb_root), **options)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with mcp.lifespan():
            yield

    app = Starlette(routes=[Route("/mcp", mcp)], lifespan=lifespan)
    return Guard(app, token=token) if guard else app


@contextlib.contextmanager
def serving(app: ASGIApp):
    """uvicorn on a loopback port in a thread; yields the base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def over_http(
    url: str, check: Check, token: str | None = TOKEN, statuses: list | None = None
) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    async def record(response: httpx2.Response) -> None:
        if statuses is not None:
            statuses.append(response.status_code)

    async def go() -> Any:
        async with (
            httpx2.AsyncClient(
                headers=headers, timeout=30, event_hooks={"response": [record]}
            ) as client,
            streamable_http_client(f"{url}/mcp", http_client=client) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await check(session)

    return anyio.run(go)


@pytest.fixture
def call(request, kb, model):
    """Run a check against the server over the transport the test is parametrised with."""
    if request.param == "stdio":
        yield lambda check: over_stdio(kb.root, model.env, check)
        return
    with serving(web_app(kb.root, TOKEN)) as url:
        yield lambda check: over_http(url, check)


both = pytest.mark.parametrize("call", ["stdio", "http"], indirect=True)


async def list_tools(session: ClientSession):
    return (await session.list_tools()).tools


def asking(question: str, paths: list[str] | None = None) -> Check:
    async def check(session: ClientSession):
        args: dict[str, Any] = {"question": question}
        if paths is not None:
            args["paths"] = paths
        return await session.call_tool("ask", args)

    return check


# -- tests ---------------------------------------------------------------------------


@both
def test_one_ask_tool_that_tells_an_agent_when_to_use_it(call):
    tools = call(list_tools)
    assert [t.name for t in tools] == ["ask"]
    tool = tools[0]
    for words in ("conventions", "decisions", "pitfalls", "how a system", "cites wiki pages"):
        assert words in tool.description
    assert tool.input_schema["required"] == ["question"]
    assert set(tool.input_schema["properties"]) == {"question", "paths", "corpus"}
    assert set(tool.output_schema["properties"]) == {
        "answer",
        "citations",
        "read",
        "covered",
        "see_also",
        "findings",
        "claims",
        "faithfulness",
        "corpus",
    }
    assert tool.annotations.read_only_hint is True


@both
def test_ask_answers_with_citations_in_text_and_structured_content(call):
    result = call(asking("How long are nightly backups kept?"))
    assert not result.is_error
    text = result.content[0].text
    body, _, sources = text.partition("\n\nSources:\n")
    assert f"[Nightly backups]({BACKUPS}#L" in body  # the page, and the lines cited
    # the cited pages, then the citation-faithfulness check in words
    assert sources == (
        f"- [Nightly backups]({BACKUPS})\nCited claims: 1 of 1 supported by the lines they cite."
    )
    data = result.structured_content
    assert data["citations"] == [{"title": "Nightly backups", "path": BACKUPS}]
    assert BACKUPS in data["read"]
    assert data["answer"] == body and data["covered"] is True


@both
def test_ask_with_paths_reads_exactly_those_pages(call):
    result = call(asking("When do backups run nightly?", paths=[BACKUPS]))
    assert not result.is_error
    assert result.structured_content["read"] == [BACKUPS]


@both
def test_a_path_outside_the_wiki_is_a_tool_error_an_agent_can_act_on(call):
    result = call(asking("What is in there?", paths=["../../etc/passwd"]))
    assert result.is_error
    text = result.content[0].text
    assert "outside the wiki" in text and "wiki/<type>/<slug>.md" in text
    missing = call(asking("What is in there?", paths=["wiki/concept/nope.md"]))
    assert missing.is_error and "No article" in missing.content[0].text


def test_an_uncovered_question_says_so_and_cites_nothing(kb, model):
    with serving(web_app(kb.root, TOKEN)) as url:
        result = over_http(url, asking("What colour is the office carpet?"))
    assert not result.is_error
    assert "does not cover" in result.content[0].text
    assert "Sources:" not in result.content[0].text
    assert result.structured_content["citations"] == []
    assert result.structured_content["covered"] is False


def test_an_empty_wiki_and_a_missing_model_are_tool_errors(tmp_path, model, monkeypatch):
    empty = KnowledgeBase.init(tmp_path / "empty")
    result = over_stdio(empty.root, model.env, asking("Why did DNS move?"))
    assert result.is_error and "no articles yet" in result.content[0].text
    assert "kb-ai compile" in result.content[0].text
    # no model named and none to find (no key, no Ollama, detection of the embedded one off)
    no_model = {k: v for k, v in model.env.items() if k != "KB_AI_MODEL"} | {
        "KB_AI_DETECT_MODEL": "0"
    }
    result = over_stdio(empty.root, no_model, asking("Why did DNS move?"))
    assert result.is_error and "No model configured" in result.content[0].text
    assert "KB_AI_MODEL" in result.content[0].text


def test_a_failing_model_is_a_tool_error(kb, model):
    refused = Reply(status=400, body='{"error": {"message": "bad request"}}')
    model.queue(refused, refused)
    with serving(web_app(kb.root, TOKEN)) as url:
        result = over_http(url, asking("Why did DNS move out of puppet?"))
    assert result.is_error
    assert "Page selection failed" in result.content[0].text


def test_http_without_the_token_is_refused(kb, model):
    asked = len(model.requests)
    with serving(web_app(kb.root, TOKEN)) as url:
        for token in (None, "wrong-token"):
            statuses: list[int] = []
            with pytest.raises(ExceptionGroup) as caught:
                over_http(url, asking("How long are backups kept?"), token=token, statuses=statuses)
            assert caught.group_contains(MCPError)  # the client cannot even initialize
            assert statuses and set(statuses) == {401}
        assert len(model.requests) == asked  # nothing reached the model
        assert [t.name for t in over_http(url, list_tools)] == ["ask"]


def test_kb_ai_serve_mounts_the_ask_tool_at_mcp_behind_its_token(kb, model):
    """The app `kb-ai serve` runs: the web app, with the MCP server the command mounts."""
    from kb_ai.cli.serve import mcp_mount
    from kb_ai.settings import load_settings
    from web import create_app

    settings = load_settings(kb.root)
    routes, lifespans = mcp_mount(settings)
    app = create_app(
        settings, token=TOKEN, start_worker=False, extra_routes=routes, extra_lifespans=lifespans
    )
    with serving(app) as url:
        statuses: list[int] = []
        with pytest.raises(ExceptionGroup):
            over_http(url, list_tools, token=None, statuses=statuses)
        assert statuses and set(statuses) == {401}
        result = over_http(url, asking("How long are nightly backups kept?"))
        page = httpx2.get(f"{url}/wiki", headers={"Authorization": f"Bearer {TOKEN}"})
    assert not result.is_error
    assert f"[Nightly backups]({BACKUPS})" in result.content[0].text
    assert page.status_code == 200  # the web app beside it


def test_kb_ai_mcp_refuses_a_directory_that_is_not_a_knowledge_base(tmp_path):
    result = CliRunner().invoke(main, ["mcp", "--kb", str(tmp_path / "nowhere")])
    assert result.exit_code == 2
    assert "kb-ai init" in result.output or "not a knowledge base" in result.output.lower()


def test_on_loopback_without_a_guard_a_foreign_host_header_is_refused(kb, model):
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream"}
    with serving(web_app(kb.root, None, guard=False, host="127.0.0.1")) as url:
        rebound = httpx2.post(
            f"{url}/mcp", json=initialize, headers={**headers, "Host": "evil.example:80"}
        )
        ok = httpx2.post(f"{url}/mcp", json=initialize, headers=headers)
    assert rebound.status_code == 421
    assert ok.status_code == 200 and ok.json()["result"]["serverInfo"]["name"] == "kb-ai"


@both
def test_a_question_over_the_length_limit_is_a_tool_error_before_any_model_call(call, model):
    asked = len(model.requests)
    result = call(asking("Why did DNS move out of puppet? " + "And why? " * 450))
    assert result.is_error
    text = result.content[0].text
    assert "The question is over 4,000 characters" in text and "shorten it" in text
    assert len(model.requests) == asked
