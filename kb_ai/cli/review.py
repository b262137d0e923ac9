"""`kb-ai review`: compile runs held on review branches, shown, approved or rejected."""

from __future__ import annotations

import click

from kb_ai.cli import main
from kb_ai.cli._admin import echo_json, kb_command
from kb_ai.service import OpenKb


@main.group()
def review() -> None:
    """Runs compiled with --review (or review = true) wait on review/<run> branches.

    \b
    kb-ai review list           the runs waiting
    kb-ai review show RUN       what a run changes (a diff against main)
    kb-ai review approve RUN    merge it into main (indexes rebuilt if main moved)
    kb-ai review reject RUN     drop it; its sources compile again next time
                                (web submissions: Retry on the Status page)
    """


@kb_command(review, name="list", json_help="Print the runs as JSON.")
def list_(okb: OpenKb, as_json: bool) -> None:
    """The runs waiting for review."""
    from kb_ai.service import reviewing

    reviews = reviewing.reviews(okb)
    if as_json:
        echo_json(reviews)
        return
    if not reviews:
        click.echo("No run is waiting for review.")
    for r in reviews:
        click.echo(f"{r.run:>6}  {r.created_at}  {r.summary.splitlines()[0]}")


@kb_command(review)
@click.argument("run")
def show(okb: OpenKb, run: str) -> None:
    """The run's commit message and its diff against main."""
    from kb_ai.service import reviewing

    r = reviewing.review(okb, run)
    click.echo(f"run {r.run} ({r.state}) on {r.branch}\n\n{r.summary}\n")
    if r.state != "pending":
        return
    for held in reviewing.held(okb, r):  # an update that meets a hand edit: both versions
        click.echo(f"=== {held['path']}: the hand edit (on main; reject keeps it)")
        click.echo(held["person"])
        click.echo(f"=== {held['path']}: kb-ai's new version")
        click.echo(held["kb_ai"])
        click.echo("=== what approve puts on main, against main:")
    click.echo(reviewing.diff(okb, r.run))


@kb_command(review)
@click.argument("run")
def approve(okb: OpenKb, run: str) -> None:
    """Merge the run into main."""
    from kb_ai.service import reviewing

    commit = reviewing.approve(okb, run)
    click.echo(f"Approved run {run.removeprefix('review/')}: main is at {commit}")


@kb_command(review)
@click.argument("run")
def reject(okb: OpenKb, run: str) -> None:
    """Drop the run; its sources are compiled again by the next compile.

    Documents submitted in the web UI (or the API) fail with the reason and keep their
    submitted copy: Retry on the Status page (or POST /api/tasks/ID/retry) compiles them
    again, Delete drops them."""
    from kb_ai.service import reviewing

    rejection = reviewing.reject(okb, run)
    click.echo(
        f"Rejected run {run.removeprefix('review/')};"
        f" {len(rejection.sources)} source(s) pending again"
    )
    if rejection.tasks:
        click.echo(
            f"{len(rejection.tasks)} submitted document(s) wait on the Status page:"
            " Retry compiles one again, Delete drops it"
        )
    for task in rejection.tasks:
        click.echo(f"  {task['title'] or task['filename']} ({task['id']})")
