"""An eval run's Markdown report, from its JSON report (kb_ai/service/evaluating.py):
the scores, the comparison with the run before, and each question that was not right."""

from __future__ import annotations

from typing import Any

OUTCOME_WORDS = {
    "right": "right",
    "right_abstention": "right abstention",
    "wrong": "wrong",
    "missed": "declined, though covered",
    "unsupported": "unsupported citation",
    "error": "error",
}


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _share(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def summary_lines(run: dict[str, Any]) -> list[str]:
    """The scores in a few lines (the CLI prints these too)."""
    t = run["totals"]
    counts = ", ".join(f"{t[k]} {w}" for k, w in OUTCOME_WORDS.items() if t.get(k))
    lines = [
        f"Score {_share(run['score'])} of {t['questions']} question(s): {counts or 'none'}.",
        f"Citation faithfulness {_share(run.get('faithfulness'))} "
        "(cited claims whose span supports them).",
    ]
    prev = run.get("previous")
    if prev:
        change = "no change" if not prev["drop"] else f"{-prev['drop']:+.0%}"
        lines.append(
            f"Against {prev['against']}: {_share(prev['score_then'])} -> "
            f"{_share(prev['score_now'])} on {prev['common']} common question(s) ({change})."
        )
        if run.get("regression"):
            lines.append(
                f"REGRESSION: the score fell by more than the margin ({run['margin']:.0%})."
            )
    else:
        lines.append("No earlier run of this set to compare with.")
    return lines


def markdown_report(run: dict[str, Any]) -> str:
    sample = f", a sample of {run['sample']} (seed {run['seed']})" if run.get("sample") else ""
    out = [
        f"# kb-ai eval: {run['set']}",
        "",
        f"{run['started_at']} · model `{run['model'] or 'none'}` · `{run['file']}`{sample}",
        "",
        *summary_lines(run),
        "",
        "| outcome | questions |",
        "|---|---|",
        *(f"| {w} | {run['totals'].get(k, 0)} |" for k, w in OUTCOME_WORDS.items()),
    ]
    prev = run.get("previous") or {}
    for key, title in (
        ("regressed", "Right before, not now"),
        ("improved", "Right now, not before"),
    ):
        if prev.get(key):
            out += ["", f"## {title}", "", *(f"- {_cell(q)}" for q in prev[key])]
    out += [
        "",
        "## Questions",
        "",
        "| line | question | outcome | why | faithfulness |",
        "|---|---|---|---|---|",
    ]
    for q in run["questions"]:
        out.append(
            f"| {q['line']} | {_cell(q['question'])} | {OUTCOME_WORDS[q['outcome']]} | "
            f"{_cell(q['detail']) or ''} | {_share(q['faithfulness'])} |"
        )
    wrong = [q for q in run["questions"] if q["outcome"] not in ("right", "right_abstention")]
    if wrong:
        out += ["", "## Answers that were not right", ""]
        for q in wrong:
            expect = q["expect"] if isinstance(q["expect"], str) else "; ".join(q["expect"])
            out += [
                f"### Line {q['line']}: {_cell(q['question'])}",
                "",
                f"- expected: {_cell(expect)}",
                f"- outcome: {OUTCOME_WORDS[q['outcome']]}: {_cell(q['detail'])}",
                *(f"- unsupported: {_cell(c)}" for c in q.get("unsupported") or []),
                "",
                *(
                    f"> {line}" if line else ">"
                    for line in (q["answer"] or "(no answer)").splitlines()
                ),
                "",
            ]
    return "\n".join(out).rstrip() + "\n"
