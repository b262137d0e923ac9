"""`kb-ai review`: compile runs held on review branches, shown, approved or rejected."""

from __future__ import annotations

import click

from kb_ai.cli import main
from kb_ai.cli._admin import echo_json, kb_command
from kb_ai.service import OpenKb


@main.group()
def review() -> None:
    """Runs that wait for a reviewer on review/<run> branches: every run with --review
    (or review = true), or those review_policy names (contributors, hand-edited, all).

    \b
    kb-ai review list                 the runs waiting (who submitted each, and why held)
    kb-ai review show RUN             what a run changes, article by article
    kb-ai review approve RUN          merge it into main (indexes rebuilt if main moved)
    kb-ai review reject RUN           drop it; its sources compile again next time
                                      (web submissions: Retry on the Status page)
    --article PATH (repeatable)       approve or reject only those articles of the run
    --comment TEXT                    kept in the audit log and the commit message
    """


ARTICLE = click.option(
    "--article",
    "articles",
    multiple=True,
    metavar="PATH",
    help="Only this article of the run (wiki/<type>/<slug>.md; repeat for more).",
)
COMMENT = click.option(
    "--comment", default="", help="Why: kept in the audit log and the commit message."
)


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
        by = f"  by {r.submitted_by}" if r.submitted_by else ""
        why = f"  ({r.reason})" if r.reason else ""
        click.echo(f"{r.run:>6}  {r.created_at}  {r.summary.splitlines()[0]}{by}{why}")


@kb_command(review)
@click.argument("run")
def show(okb: OpenKb, run: str) -> None:
    """The run's commit message and its diff against main."""
    from kb_ai.service import reviewing

    r = reviewing.review(okb, run)
    by = f", submitted by {r.submitted_by}" if r.submitted_by else ""
    why = f"\nheld because {r.reason}" if r.reason else ""
    click.echo(f"run {r.run} ({r.state}) on {r.branch}{by}{why}\n\n{r.summary}\n")
    if r.state != "pending":
        return
    for change, _ in reviewing.articles(okb, r):
        decided = f"  {change.decision} by {change.by}" if change.decision else ""
        said = f": {change.comment}" if change.comment else ""
        click.echo(f"  {change.status} {change.path}{decided}{said}")
    click.echo("")
    for held in reviewing.held(okb, r):  # an update that meets a hand edit: both versions
        click.echo(f"=== {held['path']}: the hand edit (on main; reject keeps it)")
        click.echo(held["person"])
        click.echo(f"=== {held['path']}: kb-ai's new version")
        click.echo(held["kb_ai"])
        click.echo("=== what approve puts on main, against main:")
    click.echo(reviewing.diff(okb, r.run))


@kb_command(review)
@click.argument("run")
@ARTICLE
@COMMENT
def approve(okb: OpenKb, run: str, articles: tuple[str, ...], comment: str) -> None:
    """Merge the run (or only --article PATH of it) into main."""
    from kb_ai.service import reviewing

    commit = reviewing.approve(okb, run, articles=articles, comment=comment)
    what = ", ".join(articles) + " of run " if articles else "run "
    click.echo(f"Approved {what}{run.removeprefix('review/')}: main is at {commit}")


@kb_command(review)
@click.argument("run")
@ARTICLE
@COMMENT
def reject(okb: OpenKb, run: str, articles: tuple[str, ...], comment: str) -> None:
    """Drop the run; its sources are compiled again by the next compile. With --article,
    main keeps its version of those articles and the rest of the run still waits.

    Documents submitted in the web UI (or the API) fail with the reason and keep their
    submitted copy: Retry on the Status page (or POST /api/tasks/ID/retry) compiles them
    again, Delete drops them."""
    from kb_ai.service import reviewing

    rejection = reviewing.reject(okb, run, articles=articles, comment=comment)
    if rejection is None:  # single articles, and the run not rejected as a whole
        click.echo(
            f"Rejected {', '.join(articles) or 'the rest'} of run {run.removeprefix('review/')}"
        )
        return
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
