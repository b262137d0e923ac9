"""The MCP wire: every message a client sends gets an answer, a malformed one too.

The SDK's own stdio reader logs a line it cannot read and goes on, so a client whose
request was malformed waits forever for the reply to its id; over HTTP it answers, but
an invalid request as "invalid params" with no id. Here each stdio line and each HTTP
POST body is looked at before the SDK reads it: one that is not JSON is answered with a
JSON-RPC parse error (-32700), one that is JSON but not a JSON-RPC message (a batch, a
request with no method, a wrong ``jsonrpc``) with an invalid-request error (-32600) that
carries its id when it has one a reply can name (else null, as JSON-RPC 2.0 says).
Everything else reaches the server as it came.

- stdio (`kb-ai mcp`): ``serve_stdio``. Blank lines are skipped; the errors go out
  through the SDK's writer, so they are whole lines among its own replies. While it
  serves, fd 0 points at the null device (the SDK does the same for fd 1), so a child
  process such as git reads nothing of the protocol.
- HTTP (/mcp of `kb-ai serve`): ``CheckedPosts`` around the SDK's ASGI app answers such
  a body with status 400 and the error.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from io import TextIOWrapper
from typing import IO, Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

ONE_PER_LINE = "send one JSON-RPC 2.0 message (a JSON object) per line"


def rejection(line: str | bytes) -> JSONRPCError | None:
    """The error reply to ``line`` (a stdio line, a POST body), or None when it is a
    JSON-RPC message for the server.

    It is accepted exactly when the SDK's stdio reader would accept it (the same check),
    so nothing passed on is dropped there."""
    try:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None
    except ValidationError:
        pass
    try:
        data = json.loads(line)
    except (ValueError, RecursionError) as exc:
        return _error(
            None, PARSE_ERROR, f"Parse error: the line is not JSON ({exc}); {ONE_PER_LINE}"
        )
    if isinstance(data, list):
        return _error(
            None, INVALID_REQUEST, f"Invalid Request: batches are not supported; {ONE_PER_LINE}"
        )
    return _error(
        _id_of(data),
        INVALID_REQUEST,
        'Invalid Request: not a JSON-RPC 2.0 message (an object with "jsonrpc": "2.0" '
        "and a method, or a result or error for an id)",
    )


def _id_of(data: Any) -> int | str | None:
    """The id a reply to ``data`` can carry: a string or an integer, else none."""
    found = data.get("id") if isinstance(data, dict) else None
    if isinstance(found, str) or (isinstance(found, int) and not isinstance(found, bool)):
        return found
    return None


def _error(request_id: int | str | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))


class CheckedLines:
    """The client's lines as the SDK's reader takes them (``async for``), less the ones
    that are not JSON-RPC messages: those are answered on the writer given to
    ``answer_on`` (lines wait for it, so none is answered before there is a writer)."""

    def __init__(self, lines: AsyncIterable[str]) -> None:
        self.lines = lines
        self.writer: Any = None
        self.ready = anyio.Event()

    def answer_on(self, writer: Any) -> None:
        self.writer = writer
        self.ready.set()

    async def __aiter__(self) -> AsyncIterator[str]:
        await self.ready.wait()
        async for line in self.lines:
            if not line.strip():
                continue
            error = rejection(line)
            if error is None:
                yield line
            else:
                await self.writer.send(SessionMessage(error))


@contextlib.contextmanager
def _wire_stdin() -> Iterator[IO[bytes]]:
    """The client's end of fd 0, read privately; fd 0 itself on the null device meanwhile."""
    wire = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        # never closed here: a reader thread may still be blocked on it at exit
        yield os.fdopen(wire, "rb", closefd=False)
    finally:
        os.dup2(wire, 0)


async def serve_stdio(server: MCPServer) -> None:
    """Serve ``server`` over stdin and stdout until the client closes stdin."""
    # The SDK serves stdio only through its own reader; the streams go to the low-level
    # server it wraps, as its own run_stdio_async hands them.
    lowlevel = server._lowlevel_server
    with _wire_stdin() as wire:
        text = TextIOWrapper(wire, encoding="utf-8", errors="replace")
        lines = CheckedLines(anyio.wrap_file(text))
        async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
            lines.answer_on(write_stream)
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


class CheckedPosts:
    """The SDK's streamable HTTP app, with each POST body that is not a JSON-RPC message
    answered here (400 and the JSON-RPC error) and every other request passed on with
    its body as it came. A body over the SDK's own limit is passed on unread, for the
    SDK to refuse."""

    def __init__(self, app: ASGIApp, max_bytes: int = DEFAULT_MAX_REQUEST_BODY_SIZE) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        read: list[Message] = []
        size, more = 0, True
        while more and size <= self.max_bytes:
            message = await receive()
            read.append(message)
            if message["type"] != "http.request":  # the client went away
                break
            size += len(message.get("body", b""))
            more = message.get("more_body", False)
        if not more and read[-1]["type"] == "http.request":
            error = rejection(b"".join(m.get("body", b"") for m in read))
            if error is not None:
                body = error.model_dump_json(by_alias=True, exclude_unset=True)
                await Response(body, 400, media_type="application/json")(scope, receive, send)
                return

        async def replay() -> Message:
            return read.pop(0) if read else await receive()

        await self.app(scope, replay, send)
