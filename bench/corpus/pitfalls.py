"""A corpus of the pitfalls the shared agent sessions hit, asked three cross-session
questions by the stand-in model and by the embedded local model.

    python -m bench.corpus.pitfalls [--no-local] [--out FILE]

The sessions of ../shared/data/transcripts (Claude Code JSONL, terminal captures,
SWE-agent trajectories) are compiled one `kb-ai compile` each, in the order they started
(bench/lessons/replay.py's order), into a fresh KB with the stand-in model (tests/fakes,
OpenAI wire format over loopback HTTP): a compile with the embedded model would take
hours here. Then `kb-ai corpus build pitfalls --type pitfall` (or, when the model typed
no article `pitfall`, as the stand-in does not, `--source-kind transcript`: every article
the sessions made, their pitfalls among them) and three questions,
written before any answer was seen, through `kb-ai ask --corpus pitfalls --json`: once
with the stand-in, once with `local/default` (slow: one run, three questions).

Per question and model: whether the corpus was read whole or selected inside, pages
read, records cited, seconds, and the answer itself, so a person can check by eye that
what it states is in the records it cites. Written to bench/out/corpus/pitfalls.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

from bench._common import REPO, load_average, machine
from bench._kb import kb_ai, last_json
from bench.lessons.replay import sessions
from tests.fakes.kb_responder import respond
from tests.fakes.openai_server import FakeOpenAIServer

OUT = REPO / "bench" / "out" / "corpus"
# fixed before the first run: not tuned on the answers
QUESTIONS = [
    "What goes wrong most often when running the tests?",
    "Which pitfalls recur across sessions?",
    "What should a new session check before editing the worker?",
]
STAND_IN = "openai/fake-model"
LOCAL = "local/default"


def cli(kb: Path, model: str, env: dict[str, str], *args: str) -> tuple[dict, float]:
    """``kb-ai <args>`` in a subprocess, as a user runs it: its JSON and its seconds."""
    proc, seconds = kb_ai(*args, model=model, kb=kb, **env)
    if proc.returncode:
        raise SystemExit(f"kb-ai {' '.join(args[:2])} failed: {proc.stderr[-2000:]}")
    return (last_json(proc) if "--json" in args else {}), seconds


def ask_all(kb: Path, model: str, env: dict[str, str]) -> list[dict]:
    rows = []
    for question in QUESTIONS:
        load = load_average()
        data, seconds = cli(kb, model, env, "ask", "--json", "--corpus", "pitfalls", question)
        rows.append(
            {
                "question": question,
                "corpus": data.get("corpus"),
                "read": data["read"],
                "cited": sorted({c["path"] for c in data["citations"]}),
                "covered": data.get("covered"),
                "seconds": round(seconds, 1),
                "load_before": round(load, 2),
                "answer": data["answer"],
            }
        )
        print(f"[{model}] {question}: {seconds:.1f} s, read {len(data['read'])}, "
              f"cited {len(rows[-1]['cited'])}", file=sys.stderr)  # fmt: skip
    return rows


def run(local: bool) -> dict:
    shutil.rmtree(OUT / "pitfalls-kb", ignore_errors=True)
    OUT.mkdir(parents=True, exist_ok=True)
    kb = OUT / "pitfalls-kb"
    result: dict = {"questions": QUESTIONS, "machine": machine()}
    with FakeOpenAIServer(respond) as server:
        env = {"KB_AI_API_BASE": server.base_url, "KB_AI_API_KEY": "sk-bench"}
        cli(kb, STAND_IN, env, "init", "--no-hint")
        order = sessions()
        started = time.monotonic()
        for _, path in order:
            cli(kb, STAND_IN, env, "compile", str(path))
        result["compile"] = {
            "sessions": [f"{p.parent.name}/{p.name}" for _, p in order],
            "seconds": round(time.monotonic() - started, 1),
            "articles": len(list((kb / "wiki").rglob("*.md"))),
            "load_after": round(load_average(), 2),
        }
        # the pitfall articles if the model typed any; else every article the sessions made
        proc, _ = kb_ai("corpus", "build", "pitfalls", "--type", "pitfall", "--json",
                        model=STAND_IN, kb=kb, **env)  # fmt: skip
        result["type_pitfall"] = proc.stderr.strip()[-400:] if proc.returncode else "built"
        if proc.returncode:
            built, _ = cli(kb, STAND_IN, env, "corpus", "build", "pitfalls", "--source-kind",
                           "transcript", "--json")  # fmt: skip
        else:
            built = last_json(proc)
        result["corpus"] = built
        result["lessons"] = len(list((kb / "lessons").glob("*.md")))
        result["stand-in"] = ask_all(kb, STAND_IN, env)
    if local:
        # no provider address: the embedded model answers in process
        result["local"] = ask_all(kb, LOCAL, {})
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--no-local", action="store_true", help="the stand-in model only")
    parser.add_argument("--out", default=str(OUT / "pitfalls.json"), help="the JSON figures")
    args = parser.parse_args(argv)
    if not sessions():
        sys.exit("../shared/data/transcripts is not here: the shared test data is needed")
    result = run(local=not args.no_local)
    text = json.dumps(result, indent=2, ensure_ascii=False)
    Path(args.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
