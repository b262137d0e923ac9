"""The MCP server: one `ask` tool that answers from the wiki with citations, for any agent.

It only translates, like the CLI: arguments into an ask through the application layer
(kb_ai/service), the Answer into tool content, a kb-ai error into a tool error
(``isError``) whose text says what to do and whose structured content is kb-ai's one
error shape (kb_ai/service/errors.py), as the JSON API sends it.
Two transports over the same server:

- stdio: `run_stdio(kb_dir, overrides)`, behind ``kb-ai mcp``;
- streamable HTTP: `http_app(kb_dir, overrides)`, which `kb-ai serve` mounts at /mcp::

      mcp = http_app(settings.kb_dir, overrides)

      @contextlib.asynccontextmanager
      async def lifespan(app):
          async with mcp.lifespan():
              yield

      Starlette(routes=[Route("/mcp", mcp), ...], middleware=[token guard], lifespan=lifespan)

The SDK is the optional `mcp` extra (``pip install 'kb-ai[mcp]'``); importing this module
without it raises ImportError.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any, NotRequired

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field
from starlette.types import Receive, Scope, Send
from typing_extensions import TypedDict  # pydantic needs it on Python < 3.12

from kb_ai.errors import KbAiError
from kb_ai.service import Actor, OpenKb, error_fields, open_kb
from kb_ai.service.asking import ask as answer_question
from kb_ai.service.fairness import QuestionBuckets, TooManyQuestionsError
from retrieval import Answer

ASK_DESCRIPTION = """\
Ask the team's knowledge base and get an answer with citations. The knowledge base is a \
wiki compiled from the team's notes, documents, meeting records and past agent sessions.

Use it before guessing how things are done here: project conventions, past decisions and \
why they were made, known pitfalls and their fixes, how a system or process works, what \
was agreed. Ask one self-contained question in plain words, e.g. "Why did we move DNS \
out of puppet?".

The answer cites wiki pages inline as [Title](wiki/<type>/<slug>.md) and ends with a \
Sources list. Those paths are pages of the knowledge base, not files in your working \
tree; pass them back in `paths` to ask a follow-up about exactly those pages. When the \
wiki does not cover the question, the answer says so and cites nothing: do not present \
it as the team's knowledge then.

Name a `corpus` (a slice of the wiki the team saved, e.g. every pitfall of one \
subsystem) to answer from its articles only; a question across its records ("what \
recurs?") gets a synthesis citing each record. An unknown name is an error that lists \
the corpora there are."""

QUESTION_HELP = "One self-contained question, in plain words."
PATHS_HELP = (
    "Optional: answer from exactly these wiki pages (e.g. wiki/decision/dns.md, as cited "
    "by an earlier answer) instead of letting the knowledge base pick pages."
)

CORPUS_HELP = (
    "Optional: the name of a corpus (a saved slice of the wiki) to answer from, instead "
    "of the whole wiki; not together with `paths`."
)

LOOPBACK = ("127.0.0.1", "localhost", "::1")


class CitedPage(TypedDict):
    title: str
    path: str
    kb: NotRequired[str]  # the other knowledge base (also) the page is from


class CheckFinding(TypedDict):
    """What the answer's checks removed or changed, and why."""

    check: str  # grounding | citation | selection | coverage
    detail: str
    claim: str
    path: str


class CitedSpan(TypedDict):
    """Lines ``start``..``end`` of ``path`` (1-based, of the file) and their text."""

    path: str
    start: int
    end: int
    text: str


class AnswerClaim(TypedDict):
    """One cited claim of the answer, the span of the cited page found for it, and
    whether that span supports it (``why`` says what it lacks when not)."""

    claim: str
    path: str
    span: CitedSpan | None
    supported: bool
    why: str


class CorpusAsked(TypedDict):
    """The corpus an answer came from, and whether it was read whole."""

    name: str
    read_whole: bool
    articles: int


class AskResult(TypedDict):
    """What `ask` returns as structured content."""

    answer: str
    citations: list[CitedPage]
    read: list[str]
    covered: bool
    see_also: list[CitedPage]  # nearby pages of a question the wiki does not cover
    findings: list[CheckFinding]
    claims: list[AnswerClaim]
    faithfulness: float | None  # share of cited claims their span supports; None: none cited
    corpus: CorpusAsked | None


def build_server(
    kb_dir: str | None = None,
    settings_overrides: Mapping[str, Any] | None = None,
    *,
    okb: OpenKb | None = None,
    questions: QuestionBuckets | None = None,
) -> MCPServer:
    """The MCP server with its one `ask` tool, over the knowledge base at kb_dir (or
    ``okb``, one opened already through kb_ai.service).

    The settings are built and the knowledge base opened here, once: a directory that is
    not a knowledge base fails now (NotAKnowledgeBaseError), not at the first question.
    The model is opened per call, so "no model configured" reaches the agent as a tool
    error it can report.

    Over HTTP behind the web app's guard, each call asks as the person whose token it
    carries, and spends one of their ``questions`` (the web app's buckets, shared with
    /api/ask): past their share the tool error has status 429 and ``retry_after``.
    """
    if okb is None:
        okb = open_kb(kb_dir, overrides=settings_overrides, actor=Actor.agent("mcp client"))
    server = MCPServer(
        "kb-ai",
        title="kb-ai knowledge base",
        instructions="Call `ask` for this team's conventions, decisions, pitfalls and how "
        "things work here; answers cite the wiki pages they come from.",
        version=_version(),
        log_level="WARNING",
    )

    async def ask(
        question: Annotated[str, Field(description=QUESTION_HELP)],
        ctx: Context,
        paths: Annotated[list[str] | None, Field(description=PATHS_HELP)] = None,
        corpus: Annotated[str | None, Field(description=CORPUS_HELP)] = None,
    ) -> Annotated[CallToolResult, AskResult]:
        try:
            asker = _asker(okb, ctx, questions)
            answer = await _answer(asker, question, paths, corpus)
        except KbAiError as exc:
            fields = error_fields(exc)
            if isinstance(exc, TooManyQuestionsError):
                fields["retry_after"] = round(exc.retry_after, 1)
            return CallToolResult(
                content=[TextContent(type="text", text=str(exc))],
                structured_content=fields,
                is_error=True,
            )
        return CallToolResult(
            content=[TextContent(type="text", text=format_answer(answer))],
            structured_content=_structured(answer),
        )

    server.add_tool(
        ask,
        name="ask",
        title="Ask the team knowledge base",
        description=ASK_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    return server


def _asker(okb: OpenKb, ctx: Context, questions: QuestionBuckets | None) -> OpenKb:
    """The knowledge base for whoever sent the call (over HTTP, the person the guard let
    in), once their question fits their share."""
    try:
        request = ctx.request_context.request
    except ValueError:  # called outside a request (a test calling the tool directly)
        request = None
    if getattr(request, "scope", None) is None:  # stdio: the agent that started the server
        return okb
    from web.people import visitor  # (over HTTP: the web app is loaded already)

    who = visitor(request)  # type: ignore[arg-type]
    if questions is not None:
        questions.take(who.name)
    return okb if who.actor is None else okb.acting_as(who.actor)


async def _answer(
    okb: OpenKb, question: str, paths: Sequence[str] | None, corpus: str | None = None
) -> Answer:
    """The answer, with a model client opened for this call (and closed after it)."""
    return await answer_question(okb, question, paths=paths or None, corpus=corpus or None)


def format_answer(answer: Answer) -> str:
    """The answer as an agent reads it: the text, then one Sources line per cited page
    (and, from a corpus too large to read whole, that pages were selected inside it)."""
    text = answer.answer
    if answer.corpus and not answer.corpus["read_whole"]:
        name = answer.corpus["name"]
        text += f"\n\n(Corpus {name} is too large to read whole: pages were selected inside it.)"
    if not answer.citations:
        return text
    sources = "\n".join(
        f"- [{c.title}]({c.path})" + (f" (from knowledge base {c.kb})" if c.kb else "")
        for c in answer.citations
    )
    checked = f"\n{answer.checked}" if answer.checked else ""
    return f"{text}\n\nSources:\n{sources}{checked}"


def _structured(answer: Answer) -> AskResult:
    return {
        "answer": answer.answer,
        "citations": [c.as_dict() for c in answer.citations],  # type: ignore[misc]
        "read": list(answer.read),
        "covered": answer.covered,
        "see_also": [{"title": c.title, "path": c.path} for c in answer.see_also],
        "findings": [
            {"check": f.check, "detail": f.detail, "claim": f.claim, "path": f.path}
            for f in answer.findings
        ],
        "claims": [c.as_dict() for c in answer.claims],  # type: ignore[misc]
        "faithfulness": answer.faithfulness,
        "corpus": answer.corpus,  # type: ignore[typeddict-item]
    }


def _version() -> str:
    try:
        return version("kb-ai")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return ""


def run_stdio(
    kb_dir: str | None = None, settings_overrides: Mapping[str, Any] | None = None
) -> None:
    """Serve over stdin/stdout until the client closes them (what `kb-ai mcp` runs); a
    line that is not a JSON-RPC message gets a JSON-RPC error (kb_ai/cli/mcp_wire.py)."""
    import anyio

    from kb_ai.cli.mcp_wire import serve_stdio

    anyio.run(serve_stdio, build_server(kb_dir, settings_overrides))


class McpHttpApp:
    """The streamable HTTP endpoint as a plain ASGI app, for mounting in another app.

    Mount it on one path (``Route("/mcp", app)``; it answers POST, GET and DELETE itself)
    and enter ``app.lifespan()`` in the parent's lifespan: a mounted app gets no lifespan
    events of its own, and the session manager must be running before the first request
    ("Task group is not initialized"). ``lifespan()`` can be entered once per app object.
    Authentication is the parent's job (the token middleware wraps this like any route).
    """

    def __init__(self, server: MCPServer, session_manager: StreamableHTTPSessionManager) -> None:
        self.server = server
        self.session_manager = session_manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.session_manager.handle_request(scope, receive, send)

    def lifespan(self) -> AbstractAsyncContextManager[None]:
        return self.session_manager.run()


def http_app(
    kb_dir: str | None = None,
    settings_overrides: Mapping[str, Any] | None = None,
    *,
    host: str | None = None,
    questions: QuestionBuckets | None = None,
) -> McpHttpApp:
    """The `ask` server over streamable HTTP, ready to mount (see McpHttpApp).

    Stateless, with JSON responses: every POST is answered on its own, so nothing is
    kept between requests, any worker can answer any request, and proxies see plain
    JSON rather than event streams.

    Who may call it is the parent's rule (token, Host and Origin checks), the same as
    for its other routes. ``host``, only for mounting without such a guard: the address
    served on; when it is loopback, requests whose Host header does not name loopback
    are refused (the SDK's DNS rebinding protection). Behind a guard that checks Host
    itself, leave it out: a second check would also refuse a reverse proxy that
    forwards its own Host to a token-protected server on loopback. ``questions``: the
    per-person buckets the `ask` tool spends from (the web app's, for one share each).
    """
    server = build_server(kb_dir, settings_overrides, questions=questions)
    security = None
    if host is not None and host in LOOPBACK:
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=[
                "127.0.0.1:*",
                "localhost:*",
                "[::1]:*",
                "127.0.0.1",
                "localhost",
                "[::1]",
            ],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    # streamable_http_app() is what creates the server's session manager; its own
    # Starlette wrapper (a route at a fixed path) is not used.
    server.streamable_http_app(stateless_http=True, json_response=True, transport_security=security)
    return McpHttpApp(server, server.session_manager)
