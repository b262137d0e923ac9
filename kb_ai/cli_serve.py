"""`kb-ai serve`: the web app (pages, JSON API, compile workers) under uvicorn."""

from __future__ import annotations

import os

import click

from kb_ai.cli import Context, main, pass_context, translate_errors
from kb_ai.errors import UsageError


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
    Binding anything but 127.0.0.1/::1/localhost requires a token: set KB_AI_TOKEN,
    then open http://HOST:PORT/?token=<token> once, or send
    "Authorization: Bearer <token>" from scripts.
    """
    import uvicorn

    from web import create_app
    from web.auth import is_loopback

    token = os.environ.get("KB_AI_TOKEN") or None
    if not is_loopback(host) and not token:
        raise UsageError(
            f"Refusing to serve on {host} without a token: anyone who can reach it could read "
            "and change the wiki",
            hint="set KB_AI_TOKEN to a long random value (e.g. KB_AI_TOKEN=$(openssl rand -hex 24)), "
            "or serve on 127.0.0.1",
        )
    if token is not None and len(token) < 16:
        raise UsageError("KB_AI_TOKEN is too short", hint="use at least 16 random characters")
    settings = ctx.settings(model=model or ctx.model)
    app = create_app(settings, workers=workers, token=token)
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"kb-ai serving {settings.kb_dir} at http://{shown}:{port}", err=True)
    uvicorn.run(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=3)
