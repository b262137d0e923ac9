"""`kb-ai settings`: every setting, its value for this knowledge base, and what it does."""

from __future__ import annotations

import json
import textwrap

import click

from kb_ai.cli import Context, main, pass_context, translate_errors


@main.command("settings")
@click.option("--json", "as_json", is_flag=True, help="Print them as one JSON object.")
@pass_context
@translate_errors
def settings_command(ctx: Context, as_json: bool) -> None:
    """List the settings: name, value here (option, KB_AI_<NAME>, kb-ai.toml or default),
    and what each does. Set them in <kb>/kb-ai.toml as `name = value`."""
    from kb_ai.settings import TOML_KEYS, describe_settings

    settings = ctx.settings(detect=False)
    rows = [
        (name, _shown(name, getattr(settings, name)), help)
        for name, help, _default in describe_settings()
        if name in TOML_KEYS
    ]
    if as_json:
        click.echo(json.dumps({n: v for n, v, _ in rows}, ensure_ascii=False))
        return
    for name, value, help in rows:
        click.echo(f"{name} = {json.dumps(value, ensure_ascii=False)}")
        click.echo(textwrap.indent(textwrap.fill(help, 84), "    "))


def _shown(name: str, value: object) -> object:
    """The value as JSON can carry it; a key is never printed, only whether it is set."""
    if name.endswith("_key") and value:
        return "(set)"
    if isinstance(value, tuple):
        return list(value)
    plain = str | int | float | bool | list | dict
    return value if value is None or isinstance(value, plain) else str(value)
