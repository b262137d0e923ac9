"""`kb-ai users` (the people who may use a served knowledge base, their roles and
tokens) and `kb-ai audit` (who did what)."""

from __future__ import annotations

import json

import click

from kb_ai.cli import Context, main, pass_context, translate_errors
from wiki.people import ROLES

ROLE = click.Choice(ROLES)


def _kb(ctx: Context):
    return ctx.open_kb(ctx.settings(detect=False, announce=False))


@main.group()
def users() -> None:
    """People who may use `kb-ai serve`, each with a role and a token of their own.

    \b
    reader       browse the wiki, ask questions (Chat, MCP `ask`)
    contributor  also submit, upload, edit
    reviewer     also approve or reject held runs
    admin        also people, removal of sources, settings
    A token is shown once, on the last line, when it is made; only its hash is kept.
    """


@users.command()
@click.argument("name")
@click.option("--role", type=ROLE, default="reader", show_default=True)
@click.option("--email", help="Their email, the author email of what they commit.")
@pass_context
@translate_errors
def add(ctx: Context, name: str, role: str, email: str | None) -> None:
    """Add a person; prints their token once, on the last line."""
    from kb_ai.service import people

    person, token = people.add(_kb(ctx), name, role, email)
    click.echo(f"Added {person.name} ({person.role}). Their token, shown this once:")
    click.echo(token)


@users.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print the people as JSON.")
@pass_context
@translate_errors
def list_(ctx: Context, as_json: bool) -> None:
    """Everyone, with their role."""
    from kb_ai.service import people

    found = people.people(_kb(ctx))
    if as_json:
        click.echo(json.dumps([p.as_dict() for p in found], ensure_ascii=False))
        return
    if not found:
        click.echo("No people yet: kb-ai users add NAME --role ROLE")
    for p in found:
        click.echo(f"{p.name:<24} {p.role:<12} token from {p.token_at}")


@users.command()
@click.argument("name")
@pass_context
@translate_errors
def remove(ctx: Context, name: str) -> None:
    """Remove a person; their token stops working at once."""
    from kb_ai.service import people

    click.echo(f"Removed {people.remove(_kb(ctx), name).name}.")


@users.command()
@click.argument("name")
@pass_context
@translate_errors
def token(ctx: Context, name: str) -> None:
    """A new token for NAME (printed once, on the last line); the old one is revoked."""
    from kb_ai.service import people

    new = people.new_token(_kb(ctx), name)
    click.echo(f"New token for {name}, shown this once (the old one no longer works):")
    click.echo(new)


@users.command()
@click.argument("name")
@click.argument("role", type=ROLE)
@pass_context
@translate_errors
def role(ctx: Context, name: str, role: str) -> None:
    """Give NAME another role."""
    from kb_ai.service import people

    person = people.set_role(_kb(ctx), name, role)
    click.echo(f"{person.name} is now {person.role}.")


@main.command()
@click.option("--since", metavar="WHEN", help="Only entries at or after this ISO date or time.")
@click.option("--json", "as_json", is_flag=True, help="Print the entries as JSON.")
@pass_context
@translate_errors
def audit(ctx: Context, since: str | None, as_json: bool) -> None:
    """The audit log: who signed in, submitted, removed, approved, rejected, changed a
    role or a token, when, and from which address (oldest first)."""
    from kb_ai.service import people

    found = people.entries(_kb(ctx), since)
    if as_json:
        click.echo(json.dumps([e.as_dict() for e in found], ensure_ascii=False))
        return
    for entry in found:
        click.echo(entry.line)
