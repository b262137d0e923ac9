"""`kb-ai doctor`: which model will be used, why, and whether it answers."""

from __future__ import annotations

import asyncio
import time

import click

from kb_ai.cli import EXIT_FAILED, Context, main, pass_context, translate_errors
from kb_ai.errors import LLMError
from kb_ai.llm.probe import probe
from kb_ai.llm.types import Completion


@main.command()
@click.option("--model", help="Check this model instead of the one kb-ai would pick.")
@click.option("--no-call", is_flag=True, help="Only say which model would be used; call nothing.")
@pass_context
@translate_errors
def doctor(ctx: Context, model: str | None, no_call: bool) -> None:
    """Say which model kb-ai will use and why, then check with one call that it answers.

    \b
    The model is, in order: --model / KB_AI_MODEL / model in kb-ai.toml; else a hosted
    provider whose key is in the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...);
    else an Ollama server on localhost; else the embedded model of kb-ai[local].
    """
    from kb_ai.llm import open_llm

    settings = ctx.settings(model=model or ctx.model)
    name = settings.require_model()
    ctx.announce(settings)
    click.echo(f"model      {name}")
    click.echo(f"because    {settings.model_source}")
    if settings.api_base:
        click.echo(f"endpoint   {settings.api_base}")
    if settings.is_local:
        from kb_ai.llm._local import model_path

        click.echo(f"file       {model_path(name)} (sha256 checked)")
        from kb_ai.llm._local import cpu_threads, generation_threads

        click.echo(f"context    {settings.local_context_tokens} tokens, one call at a time")
        threads = settings.local_threads or generation_threads()
        click.echo(f"threads    {threads} generating, {cpu_threads()} reading the prompt")
    llm = open_llm(settings)
    click.echo(f"structured {llm.structured_mode}")
    if no_call:
        return
    started = time.monotonic()

    async def check() -> Completion:
        async with llm:
            return await probe(llm)

    try:
        completion = asyncio.run(check())
    except LLMError as exc:
        click.echo(f"answers    no: {exc}", err=True)
        raise SystemExit(EXIT_FAILED) from exc
    click.echo(f"answers    yes, in {time.monotonic() - started:.1f} s: {completion.text.strip()}")
