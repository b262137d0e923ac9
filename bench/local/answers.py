"""Answer accuracy of the embedded model: extractive answers (the model picks sentences,
kb-ai quotes them) against free text, on the example notes and 10 fixed questions, two
of them not covered by the notes.

    python -m bench.local.answers                 # pages: the example notes verbatim
    python -m bench.local.answers --compile       # pages: compiled by the model first

By default the wiki's pages are the four example notes themselves, word for word (one
article each, as a faithful compile would keep them), so the two modes are compared on
the answer step alone, and the run takes minutes instead of the half hour a compile
with the embedded model takes on a busy 2-core machine. Each question is asked in
process through retrieval.ask, once per mode, with the same settings otherwise. A
covered question is right when the answer holds every expected fact (case-insensitive)
and cites a page; an uncovered one is right when the answer says the wiki does not
cover it and cites nothing. Results are written after each question to
bench/out/local/answers.json, so a long run can be read midway.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "bench" / "out" / "local"
NOTES = REPO / "examples" / "notes"

# (question, facts a right answer holds; none: the notes do not cover it)
QUESTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("How many times is a failed job retried?", ("5",)),
    ("How often do the job workers poll?", ("2 seconds",)),
    ("Who decommissions the worker-2 host?", ("Jonas",)),
    ("How long does rendering a PDF invoice take?", ("1.8",)),
    ("When are deploys frozen?", ("16:00", "Friday")),
    ("How do I roll back a deploy of the invoice service?", ("previous release tag",)),
    ("Who must approve a production deploy?", ("release-approvers",)),
    ("What must be run before pushing a change to the claim query?", ("--count 50",)),
    ("Which monitoring vendor do we pay for?", ()),
    ("What is the office wifi password?", ()),
)


def free_text(settings: Any) -> Any:
    """The same settings, answering in free text as larger models do."""
    from kb_ai.settings import Settings

    @dataclasses.dataclass(frozen=True)
    class FreeText(Settings):
        @property
        def answers_extractively(self) -> bool:
            return False

    return FreeText(**{f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)})


def judge(text: str, cited: list[str], facts: tuple[str, ...]) -> bool:
    """Right: every fact in the answer (a number as a whole number: 5 is not 50), and a
    citation; for a question the notes do not cover, a plain "not covered", no citation."""
    low = text.lower()
    if not facts:
        return not cited and bool(re.search(r"does not cover|not covered|no information", low))
    return bool(cited) and all(_holds(low, f.lower()) for f in facts)


def _holds(text: str, fact: str) -> bool:
    end = r"(?![\d])" if fact[-1].isdigit() else ""
    return re.search(r"(?<![\w.])" + re.escape(fact) + end, text) is not None


async def ask_all(
    kb_dir: Path, model: str, results: dict[str, Any], out: Path, modes: list[str]
) -> None:
    from kb_ai.errors import KbAiError
    from kb_ai.llm import open_llm
    from kb_ai.settings import load_settings
    from retrieval import ask
    from wiki import KnowledgeBase

    kb = KnowledgeBase.open(kb_dir)
    base = load_settings(kb_dir, {"model": model}, detect=False)
    for mode, settings in (("extractive", base), ("free text", free_text(base))):
        if mode not in modes:
            continue
        rows = results["modes"].setdefault(mode, [])
        for question, facts in QUESTIONS[len(rows) :]:
            llm = open_llm(settings, db_path=kb.state_db)
            started = time.monotonic()
            try:
                answer = await ask(kb, settings, llm, question)
                cited = [c.path for c in answer.citations]
                row = {
                    "question": question,
                    "covered": bool(facts),
                    "right": judge(answer.answer, cited, facts),
                    "answer": answer.answer[:600],
                    "cited": cited,
                    "read": answer.read,
                }
            except KbAiError as exc:
                row = {"question": question, "covered": bool(facts), "right": False,
                       "error": str(exc)[:300]}  # fmt: skip
            finally:
                await llm.aclose()
            row["seconds"] = round(time.monotonic() - started, 1)
            rows.append(row)
            out.write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")
            print(mode, row["right"], row["seconds"], question, flush=True)


def notes_as_pages(kb_dir: Path) -> None:
    """A wiki whose articles are the example notes, verbatim."""
    from wiki import Article, KnowledgeBase, build_catalog, commit_all, write_article
    from wiki.catalog import write_indexes

    kb = KnowledgeBase.init(kb_dir)
    for note in sorted(NOTES.glob("*.md")):
        text = note.read_text(encoding="utf-8")
        title = text.splitlines()[0].lstrip("# ").strip()
        summary = next(line for line in text.splitlines()[1:] if line.strip())[:200]
        write_article(kb, Article(f"wiki/note/{note.stem}.md", title, "note", summary, [],
                                  [f"raw/{note.name}"], "2026-03-20", "2026-03-20", text))  # fmt: skip
    write_indexes(kb, build_catalog(kb))
    commit_all(kb, "The example notes as pages")


def report(results: dict[str, Any]) -> str:
    """Markdown: right answers and right abstentions per mode, then each answer."""
    facts = dict(QUESTIONS)
    lines = ["| mode | right and cited (of 8) | facts right, cited or not (of 8) | right abstentions (of 2) | s per question |",
             "|---|---|---|---|---|"]  # fmt: skip
    detail = []
    for mode, rows in results["modes"].items():
        right = [judge(r.get("answer", ""), r.get("cited", []), facts[r["question"]]) for r in rows]
        answers = sum(ok for ok, r in zip(right, rows, strict=True) if r["covered"])
        abstained = sum(ok for ok, r in zip(right, rows, strict=True) if not r["covered"])
        facts_only = sum(
            judge(r.get("answer", ""), ["any"], facts[r["question"]]) for r in rows if r["covered"]
        )
        asked = f" ({len(rows)} of {len(QUESTIONS)} asked)" if len(rows) < len(QUESTIONS) else ""
        mean = sum(r["seconds"] for r in rows) / max(1, len(rows))
        lines.append(f"| {mode}{asked} | {answers} | {facts_only} | {abstained} | {mean:.0f} |")
        for ok, r in zip(right, rows, strict=True):
            said = " ".join(r.get("answer", r.get("error", "")).split())[:220]
            detail.append(f"- {mode}, {'right' if ok else 'wrong'}: {r['question']} — {said}")
    return "\n".join(lines + [""] + detail)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="local/default")
    parser.add_argument("--kb", type=Path, default=OUT / "answers-kb")
    parser.add_argument("--compile", action="store_true", help="compile the notes first")
    parser.add_argument("--report", action="store_true", help="judge and print the results")
    parser.add_argument(
        "--mode", action="append", choices=["extractive", "free text"], help="(default: both)"
    )
    args = parser.parse_args()
    if args.report:
        print(report(json.loads((OUT / "answers.json").read_text(encoding="utf-8"))))
        return
    out = OUT / "answers.json"
    OUT.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"model": args.model, "modes": {}}
    if not (args.kb / "wiki").is_dir() and not args.compile:
        notes_as_pages(args.kb)
    elif not (args.kb / "wiki").is_dir():
        env_args = [sys.executable, "-m", "kb_ai", "--kb", str(args.kb), "--model", args.model]
        subprocess.run([*env_args, "init", "--no-hint"], check=True, cwd=REPO)
        started = time.monotonic()
        proc = subprocess.run([*env_args, "compile", "--json", str(NOTES)], cwd=REPO,
                              capture_output=True, text=True)  # fmt: skip
        results["compile_s"] = round(time.monotonic() - started, 1)
        results["compile"] = proc.stdout.strip().splitlines()[-1:] or proc.stderr[-500:]
        out.write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")
        print("compiled in", results["compile_s"], "s", flush=True)
    elif out.is_file():
        results = json.loads(out.read_text(encoding="utf-8"))  # go on where it stopped
    modes = args.mode or ["extractive", "free text"]
    asyncio.run(ask_all(args.kb, args.model, results, out, modes))


if __name__ == "__main__":
    main()
