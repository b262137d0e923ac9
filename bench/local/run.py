"""Local-model benchmark: what the embedded model (or any GGUF file) does on this machine.

    python -m bench.local.run                                   # the default model
    python -m bench.local.run --model local/default --model local/~/models/bigger.gguf
    python -m bench.local.run --write                           # also writes docs/benchmarks-local.md

For each model:
- speed: prompt tokens per second (a ~600-token prompt, one token generated) and generation
  tokens per second, free and under a JSON-schema grammar (llama-cpp-python directly, with
  the same settings as kb-ai's local transport);
- compile: `kb-ai compile --json examples/notes` into a fresh knowledge base, as a user runs
  it: seconds, model calls, tokens, articles, failures;
- selection: a fixed set of questions over those notes through `kb-ai ask --json`; a hit is
  a question whose pages read include an article compiled from the note that answers it;
  also whether the answer cites such an article, and seconds per question.

Knowledge bases go to bench/out/local/ (git-ignored).
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from bench._kb import articles_from, kb_ai, last_json

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "bench" / "out" / "local"
DOC = REPO / "docs" / "benchmarks-local.md"
NOTES = REPO / "examples" / "notes"

# (question, the example note that answers it)
QUESTIONS: tuple[tuple[str, str], ...] = (
    ("Why did we choose PostgreSQL over Redis for background jobs?", "2026-03-02-queue-choice.md"),
    ("How many times is a failed job retried?", "2026-03-02-queue-choice.md"),
    ("Who decommissions the worker-2 host, and by when?", "2026-03-16-weekly-sync.md"),
    ("How long does rendering a PDF invoice take?", "2026-03-16-weekly-sync.md"),
    ("How do I roll back a deploy of the invoice service?", "deploy-howto.md"),
    ("When are deploys frozen?", "deploy-howto.md"),
    ("Why did test_claim_skips_locked_jobs fail on CI?", "session-2026-03-18-agent.md"),
    ("What must be run before pushing a change to the claim query?", "session-2026-03-18-agent.md"),
)


def measure_speed(model: str) -> dict[str, Any]:
    from llama_cpp import Llama, LlamaGrammar

    from kb_ai.llm._local import cpu_threads, model_path

    path = model_path(model)
    threads = cpu_threads()
    started = time.monotonic()
    llama = Llama(
        model_path=str(path),
        n_ctx=4096,
        n_threads=threads,
        n_threads_batch=threads,
        verbose=False,
        seed=0,
    )
    load_s = time.monotonic() - started
    text = "\n\n".join(p.read_text() for p in sorted(NOTES.glob("*.md")))
    prompt = [{"role": "user", "content": text[:2400] + "\n\nSummarise the notes above."}]

    def run(messages: list[dict], max_tokens: int, **kw: Any) -> tuple[dict, float]:
        llama.reset()
        t0 = time.monotonic()
        reply = llama.create_chat_completion(
            messages=messages, temperature=0.0, repeat_penalty=1.0, max_tokens=max_tokens, **kw
        )
        return reply["usage"], time.monotonic() - t0

    run(prompt, 1)  # warm-up
    usage, prompt_s = run(prompt, 1)
    prompt_tps = usage["prompt_tokens"] / prompt_s
    short = [{"role": "user", "content": "Write a long paragraph about databases."}]
    usage, gen_s = run(short, 128)
    gen_tps = usage["completion_tokens"] / max(1e-9, gen_s - usage["prompt_tokens"] / prompt_tps)
    schema = {
        "type": "object",
        "properties": {
            "facts": {
                "type": "array",
                "maxItems": 10,
                "items": {"type": "string", "maxLength": 200},
            }
        },
        "required": ["facts"],
    }
    grammar = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
    usage, gram_s = run(short, 128, grammar=grammar)
    gram_tps = usage["completion_tokens"] / max(1e-9, gram_s - usage["prompt_tokens"] / prompt_tps)
    return {
        "file": str(path),
        "size_mb": round(path.stat().st_size / 1e6),
        "load_s": round(load_s, 2),
        "threads": threads,
        "prompt_tps": round(prompt_tps, 1),
        "gen_tps": round(gen_tps, 1),
        "grammar_gen_tps": round(gram_tps, 1),
    }


def measure_kb(model: str, name: str) -> dict[str, Any]:
    kb = OUT / name / "kb"
    shutil.rmtree(kb, ignore_errors=True)
    kb.parent.mkdir(parents=True, exist_ok=True)
    kb_ai("init", model=model, kb=kb)
    proc, compile_s = kb_ai("compile", "--json", str(NOTES), model=model, kb=kb)
    summary = last_json(proc)
    made = articles_from(kb)
    results = []
    for question, note in QUESTIONS:
        proc, seconds = kb_ai("ask", "--json", question, model=model, kb=kb)
        answer = last_json(proc) if proc.returncode == 0 else {"read": [], "citations": []}
        good = {path for path, notes in made.items() if note in notes}
        results.append(
            {
                "question": question,
                "note": note,
                "seconds": round(seconds, 1),
                "error": proc.stderr.strip().splitlines()[-1] if proc.returncode else None,
                "read": answer.get("read", []),
                "hit": bool(good & set(answer.get("read", []))),
                "cited": bool(good & {c["path"] for c in answer.get("citations", [])}),
            }
        )
    return {
        "compile_s": round(compile_s, 1),
        "calls": summary["usage"]["calls"],
        "prompt_tokens": summary["usage"]["prompt_tokens"],
        "completion_tokens": summary["usage"]["completion_tokens"],
        "sources": summary["sources"],
        "failed": len(summary["failed"]),
        "failures": [f["error"][:200] for f in summary["failed"]],
        "articles": len(made),
        "questions": results,
        "hits": sum(r["hit"] for r in results),
        "cited": sum(r["cited"] for r in results),
        "ask_s": round(sum(r["seconds"] for r in results) / len(results), 1),
    }


def render(rows: list[dict[str, Any]]) -> str:
    n = len(QUESTIONS)
    lines = [
        "## Local models (bench/local)",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()}, "
        f"{rows[0]['speed']['threads']} threads, no GPU, llama-cpp-python "
        f"{_version('llama-cpp-python')}, Python {platform.python_version()}. "
        "`python -m bench.local.run --model ...` reproduces it.",
        "",
        "| model | file | load | prompt tok/s | gen tok/s | gen tok/s, JSON grammar | "
        "compile examples/notes | calls | tokens (prompt + completion) | articles | failed | "
        f"selection hits (of {n}) | cited | s per question |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        s, k = r["speed"], r["kb"]
        lines.append(
            f"| `{r['model']}` | {s['size_mb']} MB | {s['load_s']} s | {s['prompt_tps']} | "
            f"{s['gen_tps']} | {s['grammar_gen_tps']} | {k['compile_s']} s | {k['calls']} | "
            f"{k['prompt_tokens']:,} + {k['completion_tokens']:,} | {k['articles']} | "
            f"{k['failed']} of {k['sources']} | {k['hits']} | {k['cited']} | {k['ask_s']} |"
        )
    lines += ["", "Per question (hit: an article compiled from the answering note was read):", ""]
    for r in rows:
        lines.append(f"`{r['model']}`:")
        lines.append("")
        for q in r["kb"]["questions"]:
            mark = "hit" if q["hit"] else "miss"
            extra = f" (error: {q['error']})" if q["error"] else ""
            lines.append(
                f"- {mark}{', cited' if q['cited'] else ''}, {q['seconds']} s: "
                f"{q['question']}{extra}"
            )
        for failure in r["kb"]["failures"]:
            lines.append(f"- compile failure: {failure}")
        lines.append("")
    return "\n".join(lines)


def _version(dist: str) -> str:
    from importlib.metadata import version

    return version(dist)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", action="append", help="local/default or local/<file.gguf>")
    parser.add_argument("--write", action="store_true", help=f"write {DOC.relative_to(REPO)}")
    args = parser.parse_args()
    rows = []
    for model in args.model or ["local/default"]:
        name = Path(model.removeprefix("local/")).stem
        print(f"{model}: speed", file=sys.stderr, flush=True)
        speed = measure_speed(model)
        print(f"{model}: compile and questions", file=sys.stderr, flush=True)
        rows.append({"model": model, "speed": speed, "kb": measure_kb(model, name)})
        (OUT / f"{name}.json").write_text(json.dumps(rows[-1], indent=2))
    text = render(rows)
    print(text)
    if args.write:
        DOC.write_text(text + "\n")


if __name__ == "__main__":
    main()
