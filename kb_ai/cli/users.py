"""`kb-ai users` (the people who may use a served knowledge base, their roles and
tokens) and `kb-ai audit` (who did what)."""

from __future__ import annotations

import click

from kb_ai.cli import main
from kb_ai.cli._admin import echo_json, kb_command
from kb_ai.service import OpenKb
from wiki.people import ROLES

ROLE = click.Choice(ROLES)


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


@kb_command(users)
@click.argument("name")
@click.option("--role", type=ROLE, default="reader", show_default=True)
@click.option("--email", help="Their email, the author email of what they commit.")
def add(okb: OpenKb, name: str, role: str, email: str | None) -> None:
    """Add a person; prints their token once, on the last line."""
    from kb_ai.service import people

    person, token = people.add(okb, name, role, email)
    click.echo(f"Added {person.name} ({person.role}). Their token, shown this once:")
    click.echo(token)


@kb_command(users, name="list", json_help="Print the people as JSON.")
def list_(okb: OpenKb, as_json: bool) -> None:
    """Everyone, with their role."""
    from kb_ai.service import people

    found = people.people(okb)
    if as_json:
        echo_json(found)
        return
    if not found:
        click.echo("No people yet: kb-ai users add NAME --role ROLE")
    for p in found:
        click.echo(f"{p.name:<24} {p.role:<12} token from {p.token_at}")


@kb_command(users)
@click.argument("name")
def remove(okb: OpenKb, name: str) -> None:
    """Remove a person; their token stops working at once, and their chat sessions
    are deleted (no one else could open them)."""
    from kb_ai.service import people

    removed = people.remove(okb, name)
    click.echo(f"Removed {removed.person.name} and their {removed.chats} chat session(s).")


@kb_command(users)
@click.argument("name")
def token(okb: OpenKb, name: str) -> None:
    """A new token for NAME (printed once, on the last line); the old one is revoked."""
    from kb_ai.service import people

    new = people.new_token(okb, name)
    click.echo(f"New token for {name}, shown this once (the old one no longer works):")
    click.echo(new)


@kb_command(users)
@click.argument("name")
@click.argument("role", type=ROLE)
def role(okb: OpenKb, name: str, role: str) -> None:
    """Give NAME another role."""
    from kb_ai.service import people

    person = people.set_role(okb, name, role)
    click.echo(f"{person.name} is now {person.role}.")


@kb_command(main, json_help="Print the entries as JSON.")
@click.option(
    "--since",
    metavar="WHEN",
    help="Only entries at or after this ISO date or time (UTC unless it names its zone).",
)
def audit(okb: OpenKb, since: str | None, as_json: bool) -> None:
    """The audit log: who signed in, submitted, removed, approved, rejected, changed a
    role or a token, when, and from which address (oldest first)."""
    from kb_ai.service import people

    found = people.entries(okb, since)
    if as_json:
        echo_json(found)
        return
    for entry in found:
        click.echo(entry.line)
