"""`kb-ai learned`: the lessons agent sessions taught, and a person's verdict on them."""

from __future__ import annotations

import json

import click

from kb_ai.cli import Context, main, pass_context, translate_errors


@main.group()
def learned() -> None:
    """Pitfalls and conventions learned from agent sessions, each with its confidence.

    \b
    kb-ai learned list              every lesson: where it stands, how sure, how often seen
    kb-ai learned approve ID...     approved lessons rank first in the session-start snapshot
    kb-ai learned reject ID...      rejected ones stay out, whatever later sessions show

    A lesson starts at 0.5, gains 0.05 with each later session that shows it (to 0.9)
    and fades while unseen; at 0.55 or more it is active and may enter the snapshot.
    """


def _kb(ctx: Context):
    return ctx.open_kb(ctx.settings(detect=False, announce=False))


def _row(s) -> dict:
    lesson = s.lesson
    return {
        "id": lesson.id,
        "kind": lesson.kind,
        "state": s.state,
        "confidence": s.confidence,
        "seen": lesson.seen,
        "last_seen": lesson.last_seen,
        "text": lesson.text,
        "path": lesson.path,
        "articles": list(lesson.articles),
        "decided_by": lesson.decided_by,
    }


@learned.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print the lessons as JSON.")
@click.option(
    "--state",
    "states",
    multiple=True,
    type=click.Choice(["approved", "active", "new", "pending", "deprecated", "rejected"]),
    help="Only lessons that stand so (repeatable).",
)
@pass_context
@translate_errors
def list_(ctx: Context, as_json: bool, states: tuple[str, ...]) -> None:
    """Every lesson: the snapshot's first (approved, then active), then the rest."""
    from kb_ai.service import learned as service

    rows = [_row(s) for s in service.lessons(_kb(ctx)) if not states or s.state in states]
    if as_json:
        click.echo(json.dumps(rows, ensure_ascii=False))
        return
    if not rows:
        click.echo("No lesson learned yet: they come from compiled agent sessions.")
        return
    for r in rows:
        click.echo(
            f"{r['state']:<10} {r['confidence']:.2f}  seen {r['seen']}x  last {r['last_seen']}  "
            f"{r['kind']:<10} {r['id']}"
        )
        click.echo(f"           {r['text']}")


def _decide(ctx: Context, ids: tuple[str, ...], verb: str) -> None:
    from kb_ai.service import learned as service

    done, commit = getattr(service, verb)(_kb(ctx), list(ids))
    word = "Approved" if verb == "approve" else "Rejected"
    for lesson in done:
        click.echo(f"{word} {lesson.id}: {lesson.text}")
    if commit:
        click.echo(f"Commit {commit}")


@learned.command()
@click.argument("ids", nargs=-1, required=True)
@pass_context
@translate_errors
def approve(ctx: Context, ids: tuple[str, ...]) -> None:
    """Approve lessons (ids from `kb-ai learned list`): they rank first in the snapshot."""
    _decide(ctx, ids, "approve")


@learned.command()
@click.argument("ids", nargs=-1, required=True)
@pass_context
@translate_errors
def reject(ctx: Context, ids: tuple[str, ...]) -> None:
    """Reject lessons: out of the snapshot for good, even when sessions show them again."""
    _decide(ctx, ids, "reject")
