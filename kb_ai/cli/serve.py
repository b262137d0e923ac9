"""`kb-ai serve`: the web app (pages, JSON API, compile workers) under uvicorn."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from kb_ai.cli import Context, main, pass_context, translate_errors
from kb_ai.errors import UsageError
from kb_ai.settings import Settings

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from kb_ai.service.fairness import QuestionBuckets


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, envvar="KB_AI_HOST",
              help="Address to listen on [env KB_AI_HOST]. Anything but loopback needs KB_AI_TOKEN.")  # fmt: skip
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535),
              envvar="KB_AI_PORT", help="Port to listen on [env KB_AI_PORT].")  # fmt: skip
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 8),
              help="Compile workers in the server (compiles of one knowledge base run one at a time; each takes a batch).")  # fmt: skip
@click.option("--model", help="Model for this server (overrides KB_AI_MODEL and kb-ai.toml).")
@pass_context
@translate_errors
def serve(ctx: Context, host: str, port: int, workers: int, model: str | None) -> None:
    """Serve the wiki, submission queue, status and chat at http://HOST:PORT.

    \b
    Pages: /wiki, /submit, /status, /chat; JSON API under /api; /healthz.
    Binding anything but 127.0.0.1/::1/localhost requires a token: add people with
    `kb-ai users add NAME --role ROLE` (each gets one) or set KB_AI_TOKEN (an admin's),
    then sign in at http://HOST:PORT/login, or send "Authorization: Bearer <token>"
    from scripts.
    """
    import uvicorn

    from kb_ai.service.fairness import QuestionBuckets
    from web import create_app
    from web.auth import is_loopback

    token = os.environ.get("KB_AI_TOKEN") or None
    settings = ctx.settings(model=model or ctx.model)
    if not is_loopback(host) and not token and not _has_people(settings):
        raise UsageError(
            f"Refusing to serve on {host} without a token: anyone who can reach it could read "
            "and change the wiki",
            hint="add people with kb-ai users add NAME --role ROLE, or set KB_AI_TOKEN to a long random value (e.g. KB_AI_TOKEN=$(openssl rand -hex 24)), "
            "or serve on 127.0.0.1",
        )
    if token is not None and len(token) < 16:
        raise UsageError("KB_AI_TOKEN is too short", hint="use at least 16 random characters")
    ctx.announce(settings)
    questions = QuestionBuckets(settings.questions_per_minute)  # one share on /api and /mcp
    routes, lifespans = mcp_mount(settings, questions)
    app = create_app(
        settings, workers=workers, token=token, extra_routes=routes, extra_lifespans=lifespans,
        questions=questions,
    )  # fmt: skip
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"kb-ai serving {settings.kb_dir} at http://{shown}:{port}", err=True)
    # proxy_headers off: which proxies' X-Forwarded-* to believe is trusted_proxies's rule
    # (web/forwarded.py), and the guard must see the proxy's own address
    uvicorn.run(
        app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=3,
        proxy_headers=False,
    )  # fmt: skip


def _has_people(settings: Settings) -> bool:
    from kb_ai.service import open_kb, people

    return bool(people.people(open_kb(settings=settings)))


def mcp_mount(
    settings: Settings, questions: QuestionBuckets | None = None
) -> tuple[list[BaseRoute], list[Callable[[], Any]]]:
    """The MCP server (kb_ai/cli/mcp_server.py, streamable HTTP) at /mcp, behind the web
    app's token guard, when the MCP extra is installed (``pip install 'kb-ai[mcp]'``);
    else nothing. ``questions``: the web app's per-person buckets, so that a person's
    questions over MCP and over /api/ask share one limit."""
    from starlette.routing import Route

    try:
        from kb_ai.cli.mcp_server import http_app
        from kb_ai.cli.mcp_wire import CheckedPosts
    except ImportError:
        return [], []
    overrides = {
        "model": settings.model,
        "api_base": settings.api_base,
        "api_key": settings.api_key,
    }
    # No host= here: the guard already checks Host when there is no token, and with a
    # token a server behind a reverse proxy must answer /mcp like every other page.
    mcp = http_app(str(settings.kb_dir), overrides, questions=questions)
    # a malformed body gets its JSON-RPC error, with the request's id (kb_ai/cli/mcp_wire.py)
    return [Route("/mcp", CheckedPosts(mcp))], [mcp.lifespan]
