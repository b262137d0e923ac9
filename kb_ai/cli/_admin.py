"""What the commands that look after a knowledge base share (`kb-ai users`, `audit`,
`review`): the knowledge base opened for the person at the terminal, kb-ai's errors
as one line and an exit status, and ``--json`` printing."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable
from typing import Any

import click

from kb_ai.cli import CliError, Context, pass_context
from kb_ai.errors import KbAiError


def kb_command(
    group: click.Group, *args: Any, json_help: str | None = None, **kwargs: Any
) -> Callable[[Callable[..., Any]], click.Command]:
    """A command of ``group`` whose function gets the knowledge base (an OpenKb, for the
    CLI user) first; ``json_help``: it also takes ``--json`` (``as_json``)."""

    def wrap(fn: Callable[..., Any]) -> click.Command:
        @functools.wraps(fn)  # (keeps the options and arguments click put on fn)
        def run(ctx: Context, *a: Any, **kw: Any) -> Any:
            try:
                return fn(ctx.open_kb(ctx.settings(detect=False, announce=False)), *a, **kw)
            except KbAiError as exc:
                raise CliError(exc) from exc

        command: Callable[..., Any] = pass_context(run)
        if json_help:
            command = click.option("--json", "as_json", is_flag=True, help=json_help)(command)
        return group.command(*args, **kwargs)(command)

    return wrap


def echo_json(items: Iterable[Any]) -> None:
    """Each item's ``as_dict()``, as one JSON list."""
    click.echo(json.dumps([i.as_dict() for i in items], ensure_ascii=False))
