"""`kb-ai eval FILE`: the team's golden questions, scored; non-zero on a regression."""

from __future__ import annotations

import asyncio
import json

import click

from kb_ai.cli import EXIT_FAILED, Context, main, pass_context, translate_errors


@main.command(name="eval")
@click.argument("file", type=click.Path(path_type=str))
@click.option(
    "--sample", type=int, metavar="N", help="Ask N questions of the file, drawn at random."
)
@click.option("--seed", type=int, default=0, show_default=True, help="The draw of --sample.")
@click.option(
    "--margin",
    type=float,
    default=0.0,
    show_default=True,
    help="Exit 1 only when the score falls by more than this share (e.g. 0.05).",
)
@click.option(
    "--against",
    type=click.Path(path_type=str),
    metavar="REPORT",
    help="Compare with this JSON report instead of the set's last run.",
)
@click.option("--model", help="Model for this run (overrides KB_AI_MODEL and kb-ai.toml).")
@click.option("--json", "as_json", is_flag=True, help="Print the whole JSON report.")
@pass_context
@translate_errors
def evaluate(
    ctx: Context,
    file: str,
    sample: int | None,
    seed: int,
    margin: float,
    against: str | None,
    model: str | None,
    as_json: bool,
) -> None:
    """Ask the golden questions of FILE and score the answers.

    FILE (YAML or JSON) lists questions, each with the facts a right answer states or
    `not covered` when the wiki must decline it:

    \b
      questions:
        - question: How often do workers poll the jobs table?
          expect: [2 seconds]
        - question: Who is on call for the payments service?
          expect: not covered

    Each answer is right, a right abstention, wrong, declined though covered, an
    unsupported citation (a claim whose cited lines do not support it) or an error.
    The JSON and Markdown reports are kept in .kb-ai/eval/<set>/; the run is compared
    with the set's last one, and the command exits 1 when the score fell by more than
    --margin (run it in CI after each compile).
    """
    from kb_ai.service.eval_report import summary_lines
    from kb_ai.service.evaluating import evaluate as run_eval
    from retrieval.golden import load_golden

    load_golden(file)  # a wrong-shaped file is refused before a model is looked for
    settings = ctx.settings(model=model or ctx.model)
    okb = ctx.open_kb(settings)
    ctx.announce(settings)
    run = asyncio.run(run_eval(okb, file, sample=sample, seed=seed, margin=margin, against=against))
    report = run.as_dict()
    if as_json:
        click.echo(json.dumps(report, ensure_ascii=False))
    else:
        for q in report["questions"]:
            if q["outcome"] not in ("right", "right_abstention"):
                click.echo(f"line {q['line']}: {q['outcome']}: {q['question']} ({q['detail']})")
        for line in summary_lines(report):
            click.echo(line)
        click.echo("Reports: " + ", ".join(run.saved))
    if run.regressed:
        raise click.exceptions.Exit(EXIT_FAILED)
    if run.scored and all(s.outcome == "error" for s in run.scored):
        click.echo(f"Error: no question was answered: {run.scored[0].detail}", err=True)
        raise click.exceptions.Exit(EXIT_FAILED)
