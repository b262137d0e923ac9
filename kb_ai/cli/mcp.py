"""`kb-ai mcp`: the knowledge base as an MCP server over stdio, for agents to ask.

The server itself is kb_ai/cli/mcp_server.py; over HTTP it is mounted at /mcp by `kb-ai serve`.
"""

from __future__ import annotations

import click

from kb_ai.cli import Context, main, pass_context, translate_errors
from kb_ai.errors import UsageError


@main.command()
@click.option(
    "--kb",
    "kb_dir",
    envvar="KB_AI_DIR",
    metavar="DIR",
    help="Knowledge base directory (same as kb-ai --kb) [env KB_AI_DIR; default ./kb].",
)
@click.option("--model", help="Model for answers (overrides KB_AI_MODEL and kb-ai.toml).")
@pass_context
@translate_errors
def mcp(ctx: Context, kb_dir: str | None, model: str | None) -> None:
    """Serve the wiki to agents over MCP (stdio): one `ask` tool with cited answers.

    \b
    Register it with an agent, e.g. Claude Code:
      claude mcp add kb -- kb-ai mcp --kb /path/to/kb
    The agent starts this command itself; stdout carries the protocol, so nothing
    else is printed there. Over HTTP the same tool is at /mcp of `kb-ai serve`.
    """
    try:
        from kb_ai.cli.mcp_server import run_stdio
    except ImportError as exc:
        raise UsageError(
            "The MCP server needs the MCP SDK", hint="pip install 'kb-ai[mcp]'"
        ) from exc

    overrides: dict[str, object] = {"model": model or ctx.model}
    if ctx.also:  # --also adds to the knowledge base's own also
        from kb_ai.settings import load_settings

        overrides["also"] = (*load_settings(kb_dir or ctx.kb_dir).also, *ctx.also)
    run_stdio(kb_dir or ctx.kb_dir, overrides)
