"""`kb-ai eval` on the example notes' golden set, with the stand-in model or a real one.

    python -m bench.ask.golden                          # the stand-in (tests/fakes), HTTP
    python -m bench.ask.golden --model local/default    # the embedded model: compile + eval

A fresh knowledge base compiles examples/notes with the model, then `kb-ai eval
examples/notes-golden.yaml --json` asks its 10 questions (7 covered, 3 not) in one
process (the model loaded once). Printed: the outcomes, the score, the citation
faithfulness, each question's seconds, the compile's seconds, and the load average.
The whole report goes to bench/out/ask/golden-<model>.json, the knowledge base stays in
bench/out/ask/golden-kb-<model>/.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "bench" / "out" / "ask"


def kb_ai(kb: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kb_ai", "--kb", str(kb), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=7200,
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", help="a model as kb-ai names it (default: the stand-in)")
    args = ap.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KB_AI_")}
    env.update(PYTHONPATH=str(REPO), KB_AI_NOTICE_SHOWN="1", KB_AI_DETECT_MODEL="0")
    with contextlib.ExitStack() as stack:
        if args.model:
            env["KB_AI_MODEL"] = args.model
        else:
            sys.path.insert(0, str(REPO))
            from tests.fakes.kb_responder import respond
            from tests.fakes.openai_server import FakeOpenAIServer

            server = stack.enter_context(FakeOpenAIServer(respond))
            env.update(KB_AI_MODEL="openai/fake-model", KB_AI_API_BASE=server.base_url,
                       KB_AI_API_KEY="sk-bench")  # fmt: skip
        name = re.sub(r"[^\w.-]+", "-", args.model or "stand-in")
        kb = OUT / f"golden-kb-{name}"  # kept: `kb-ai --kb ... eval` again reads its answers' cache
        shutil.rmtree(kb, ignore_errors=True)
        loads = [os.getloadavg()[0]]
        assert kb_ai(kb, env, "init", "--no-hint").returncode == 0
        began = time.monotonic()
        compiled = kb_ai(kb, env, "compile", str(REPO / "examples" / "notes"))
        compile_seconds = time.monotonic() - began
        if compiled.returncode != 0:
            raise SystemExit(compiled.stdout + compiled.stderr)
        loads.append(os.getloadavg()[0])
        ran = kb_ai(kb, env, "eval", "--json", str(REPO / "examples" / "notes-golden.yaml"))
        loads.append(os.getloadavg()[0])
        report = json.loads(ran.stdout.splitlines()[0])
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"golden-{name}.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    for q in report["questions"]:
        print(f"{q['seconds']:6.1f} s  {q['outcome']:16}  {q['question']}  {q['detail']}")
    seconds = [q["seconds"] for q in report["questions"]]
    print(
        json.dumps(
            {
                "model": args.model or "stand-in",
                "score": report["score"],
                "totals": report["totals"],
                "faithfulness": report["faithfulness"],
                "compile_seconds": round(compile_seconds, 1),
                "question_seconds_p50": statistics.median(seconds),
                "question_seconds_max": max(seconds),
                "load": loads,
                "eval_exit": ran.returncode,
            }
        )
    )


if __name__ == "__main__":
    main()
