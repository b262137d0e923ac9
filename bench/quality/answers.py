"""Answer quality with the embedded model: right answers, right abstentions, citations.

    python -m bench.quality.answers                 # prints the figures
    python -m bench.quality.answers --write         # also writes its section of
                                                    # docs/benchmarks-quality.md

Compiles examples/notes with the embedded model (KB_AI_MODEL=local/default, or --model)
into a fresh knowledge base, then asks 10 fixed questions through `kb-ai ask --json`,
as a user runs it. 8 are answered by one note, 2 by none (one shares no word with the
notes, one shares words but asks what they do not say). Per question:

- right answer: a covered question whose answer is marked covered and holds one of the
  expected words; a wrong one is covered with none of them, or abstained;
- right abstention: a question no note answers, answered with ``covered: false``;
- citation precision: of all pages cited, the share compiled from the note that answers
  the question (a citation in an answer to an uncovered question is never right);
- findings: what the answer checks removed (grounding, citation, selection, coverage).

``--compile-with-stand-in`` compiles with the stand-in model of tests/fakes instead
(real HTTP on loopback; its articles are the notes' extracted sentences, verbatim), so
only the answers come from the embedded model: for a machine too busy to compile with it.

Knowledge bases go to bench/out/quality/ (git-ignored); answers.json there is rewritten
after each question. Slow: minutes to compile, about 10-20 s a question, on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from bench._kb import articles_from, kb_ai, last_json

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "bench" / "out" / "quality"
DOC = REPO / "docs" / "benchmarks-quality.md"
NOTES = REPO / "examples" / "notes"
SECTION = "## Answers with the embedded model (bench/quality/answers.py)"

# (question, the note that answers it or None, words one of which a right answer holds)
QUESTIONS: tuple[tuple[str, str | None, tuple[str, ...]], ...] = (
    (
        "Why did we choose PostgreSQL over Redis for background jobs?",
        "2026-03-02-queue-choice.md",
        ("transaction", "new service", "one more service", "restart", "back up"),
    ),
    ("How many times is a failed job retried?", "2026-03-02-queue-choice.md", ("5", "five")),
    ("Who decommissions the worker-2 host?", "2026-03-16-weekly-sync.md", ("jonas",)),
    ("How long does rendering a PDF invoice take?", "2026-03-16-weekly-sync.md", ("1.8",)),
    (
        "How do I roll back a deploy of the invoice service?",
        "deploy-howto.md",
        ("release tag", "previous release", "tag"),
    ),
    ("When are deploys frozen?", "deploy-howto.md", ("friday", "16:00")),
    (
        "Why did test_claim_skips_locked_jobs fail on CI?",
        "session-2026-03-18-agent.md",
        ("commit", "isolation", "fixture", "transaction"),
    ),
    (
        "What must be run before pushing a change to the claim query?",
        "session-2026-03-18-agent.md",
        ("count 50", "--count", "50"),
    ),
    ("What is the capital of Mongolia?", None, ()),
    ("How much does the hosted SQS queue cost per month?", None, ()),
)


def judge(answer: dict[str, Any], note: str | None, words: tuple[str, ...], made) -> dict:
    """One answer scored against what the notes say."""
    text = answer.get("answer", "").lower()
    cited = [c["path"] for c in answer.get("citations", [])]
    good = {path for path, notes in made.items() if note in notes} if note else set()
    covered = bool(answer.get("covered"))
    return {
        "covered": covered,
        "right": (covered and any(re.search(re.escape(w), text) for w in words))
        if note
        else not covered,
        "cited": len(cited),
        "cited_right": sum(p in good for p in cited),
        "findings": [f["check"] for f in answer.get("findings", [])],
        "finding_details": [f["detail"] for f in answer.get("findings", [])],
    }


def compile_notes(model: str, kb: Path, stand_in: bool) -> tuple[dict[str, Any], float]:
    if not stand_in:
        proc, seconds = kb_ai("compile", "--json", str(NOTES), model=model, kb=kb)
        return last_json(proc), seconds
    from tests.fakes.kb_responder import respond
    from tests.fakes.openai_server import FakeOpenAIServer

    with FakeOpenAIServer(respond) as server:
        proc, seconds = kb_ai(
            "compile",
            "--json",
            str(NOTES),
            model="openai/stand-in",
            kb=kb,
            KB_AI_API_BASE=server.base_url,
            KB_AI_API_KEY="sk-stand-in",
        )
    return last_json(proc), seconds


def measure(model: str, stand_in: bool = False) -> dict[str, Any]:
    kb = OUT / "kb"
    shutil.rmtree(kb, ignore_errors=True)
    kb.parent.mkdir(parents=True, exist_ok=True)
    kb_ai("init", model=model, kb=kb)
    summary, compile_s = compile_notes(model, kb, stand_in)
    made = articles_from(kb)
    rows: list[dict[str, Any]] = []
    for question, note, words in QUESTIONS:
        print(f"  {question}", file=sys.stderr, flush=True)
        proc, seconds = kb_ai("ask", "--json", question, model=model, kb=kb)
        error = proc.stderr.strip().splitlines()[-1] if proc.returncode else None
        answer = last_json(proc) if proc.returncode == 0 else {}
        rows.append(
            {
                "question": question,
                "note": note,
                "seconds": round(seconds, 1),
                "error": error,
                "answer": answer.get("answer", ""),
                "calls": answer.get("usage", {}).get("calls", 0),
                **judge(answer, note, words, made),
            }
        )
        (OUT / "answers.json").write_text(json.dumps(rows, indent=2, ensure_ascii=False))
    covered_q = [r for r in rows if r["note"]]
    uncovered_q = [r for r in rows if not r["note"]]
    cited = sum(r["cited"] for r in rows)
    return {
        "model": model,
        "compiled_by": "the stand-in model (tests/fakes)" if stand_in else model,
        "compile_s": round(compile_s, 1),
        "articles": len(made),
        "failed": len(summary["failed"]),
        "sources": summary["sources"],
        "questions": rows,
        "right_answers": sum(r["right"] for r in covered_q),
        "covered_questions": len(covered_q),
        "false_abstentions": sum(not r["covered"] for r in covered_q),
        "right_abstentions": sum(r["right"] for r in uncovered_q),
        "uncovered_questions": len(uncovered_q),
        "citations": cited,
        "citation_precision": round(sum(r["cited_right"] for r in rows) / cited, 2)
        if cited
        else None,
        "answers_changed": sum(bool(r["findings"]) for r in rows),
        "ask_s": round(sum(r["seconds"] for r in rows) / len(rows), 1),
    }


def render(r: dict[str, Any]) -> str:
    flag = " --compile-with-stand-in" if r["compiled_by"] != r["model"] else ""
    lines = [
        SECTION,
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()}, {os.cpu_count()} CPUs "
        f"shared with other work, model `{r['model']}` in process, Python "
        f"{platform.python_version()}. `python -m bench.quality.answers{flag} --write` "
        "reproduces it.",
        f"examples/notes ({r['sources']} notes) compiled by {r['compiled_by']} in "
        f"{r['compile_s']} s into {r['articles']} articles ({r['failed']} failed); then 10 "
        "fixed questions through `kb-ai ask --json`, 8 answered by one note and 2 by none.",
        "",
        "| right answers | right abstentions | questions wrongly declined | citation precision "
        "| answers the checks changed | s per question (whole process) |",
        "|---|---|---|---|---|---|",
        f"| {r['right_answers']} of {r['covered_questions']} | {r['right_abstentions']} of "
        f"{r['uncovered_questions']} | {r['false_abstentions']} | "
        f"{r['citation_precision']} ({r['citations']} citations) | {r['answers_changed']} | "
        f"{r['ask_s']} |",
        "",
        "Per question (right or wrong; covered; citations right of cited; what the checks did):",
        "",
    ]
    for q in r["questions"]:
        mark = "right" if q["right"] else "wrong"
        found = ", ".join(q["findings"]) or "nothing"
        err = f"; error: {q['error']}" if q["error"] else ""
        lines.append(
            f"- {mark}, covered {str(q['covered']).lower()}, {q['cited_right']}/{q['cited']} "
            f"cited right, checks: {found}, {q['calls']} model calls, {q['seconds']} s: "
            f"{q['question']}{err}"
        )
    return "\n".join(lines) + "\n"


def write_section(text: str) -> None:
    """Replace this benchmark's section of the page (other sections are kept)."""
    old = DOC.read_text(encoding="utf-8") if DOC.exists() else "# Quality benchmarks\n\n"
    start = old.find(SECTION)
    if start < 0:
        DOC.write_text(old.rstrip() + "\n\n" + text, encoding="utf-8")
        return
    end = old.find("\n## ", start + len(SECTION))
    rest = old[end + 1 :] if end >= 0 else ""
    DOC.write_text(old[:start] + text + ("\n" + rest if rest else ""), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=os.environ.get("KB_AI_MODEL", "local/default"))
    parser.add_argument("--write", action="store_true", help=f"write {DOC.relative_to(REPO)}")
    parser.add_argument(
        "--compile-with-stand-in",
        action="store_true",
        help="compile with the stand-in model of tests/fakes; only the answers use --model",
    )
    args = parser.parse_args()
    result = measure(args.model, args.compile_with_stand_in)
    (OUT / "answers.json").write_text(json.dumps(result, indent=2, ensure_ascii=False))
    text = render(result)
    print(text)
    if args.write:
        write_section(text)


if __name__ == "__main__":
    main()
