"""Time to an answer with the embedded model: each question as a whole `kb-ai ask`
process (the model loaded for every question) against `kb-ai serve` (loaded once, on
the first question), p50 of each.

    python -m bench.local.answer_time                  # 5 questions of the golden set
    python -m bench.local.answer_time --questions 10
    python -m bench.local.answer_time --tokens-only    # only the prompt tokens read

The wiki is the example notes verbatim, one article each (bench.local.answers), in two
copies, one per mode, so neither answers from the other's response cache. The questions
are the first N of examples/notes-golden.yaml (`kb-ai eval`'s example set), asked in
order; each answer is scored as `kb-ai eval` scores it. The serve figures are over the
API the chat page uses (/api/ask, streamed to its end); the first serve question, which
loads the model, is reported apart and left out of its p50. Results go to
bench/out/local/answer_time.json; the machine's load average is sampled around each
question.

Wall time on a shared machine moves with its load, so the same questions are also asked
in this process, counting the prompt tokens the model reads for each (llama.cpp decodes,
less the tokens it writes): a figure the load does not change. Four arrangements: with
no prompt state kept (as before kb_ai/llm/_prefix.py), the model's context emptied
before each question as in a new process, or not as in serve; and with states kept, in
one process (serve) or from the files on disk only (each question as a new process).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.local.answers import notes_as_pages
from bench.local.first_answer import ask as api_ask
from bench.local.first_answer import free_port, get

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "bench" / "out" / "local"
GOLDEN = REPO / "examples" / "notes-golden.yaml"


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KB_AI_")}
    env.update(KB_AI_MODEL="local/default", KB_AI_NOTICE_SHOWN="1", PYTHONPATH=str(REPO))
    return env


def outcome(question: Any, data: dict[str, Any]) -> str:
    from kb_ai.llm import Usage
    from retrieval.answer import Answer
    from retrieval.pages import Citation
    from retrieval.scores import score_answer

    answer = Answer(
        data.get("answer", ""),
        [Citation(c["title"], c["path"]) for c in data.get("citations") or []],
        covered=bool(data.get("covered")),
        usage=Usage(),
    )
    return score_answer(question, answer).outcome if "answer" in data else "error"


def cli_times(kb: Path, questions: list[Any]) -> list[dict[str, Any]]:
    out = []
    for q in questions:
        load = os.getloadavg()[0]
        began = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "kb_ai", "--kb", str(kb), "ask", "--json", q.question],
            capture_output=True,
            text=True,
            env=environment(),
            timeout=1800,
        )
        seconds = time.monotonic() - began
        data = json.loads(proc.stdout) if proc.returncode == 0 else {}
        out.append({"question": q.question, "seconds": round(seconds, 1), "load": load,
                    "outcome": outcome(q, data)})  # fmt: skip
        print(f"cli   {seconds:6.1f} s  {out[-1]['outcome']:16} {q.question}", flush=True)
    return out


def serve_times(kb: Path, questions: list[Any]) -> list[dict[str, Any]]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = (OUT / "answer_time_serve.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "kb_ai", "--kb", str(kb), "serve", "--port", str(port)],
        env=environment(),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    out = []
    try:
        deadline = time.monotonic() + 120
        while get(base + "/healthz") != 200:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit(f"kb-ai serve did not come up (see {log.name})")
            time.sleep(0.5)
        for q in questions:
            load = os.getloadavg()[0]
            began = time.monotonic()
            data = api_ask(base, q.question)
            seconds = time.monotonic() - began
            out.append({"question": q.question, "seconds": round(seconds, 1), "load": load,
                        "outcome": outcome(q, data if data.get("event") == "done" else {})})  # fmt: skip
            print(f"serve {seconds:6.1f} s  {out[-1]['outcome']:16} {q.question}", flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return out


ARRANGEMENTS = {  # name: (prompt states kept, each question as a new process)
    "nothing kept, one process": (False, False),
    "nothing kept, a process per question": (False, True),
    "states kept, one process (serve)": (True, False),
    "states kept, a process per question (ask)": (True, True),
}


async def tokens_read(home: Path, questions: list[Any]) -> dict[str, list[dict[str, Any]]]:
    """Prompt tokens the model reads per question, in each arrangement (see above)."""
    from kb_ai.llm import open_llm
    from kb_ai.llm._local import LocalTransport, _Loaded, model_path
    from kb_ai.settings import load_settings
    from retrieval import ask
    from retrieval.scores import score_answer
    from wiki import KnowledgeBase

    out: dict[str, list[dict[str, Any]]] = {}
    for n, (name, (kept, new_process)) in enumerate(ARRANGEMENTS.items()):
        kb_dir = home / f"tokens-{n}"
        notes_as_pages(kb_dir)  # its own copy: no reply of kb-ai's response cache reused
        kb = KnowledgeBase.open(kb_dir)
        settings = load_settings(kb_dir, {"model": "local/default"}, detect=False)
        local = LocalTransport(settings.local_context_tokens, settings.local_threads or None)
        llama = _Loaded.get(model_path("local/default"), local.context_tokens, local.threads)
        assert _Loaded.states is not None
        llama.set_cache(_Loaded.states if kept else None)
        llama.forget()
        _Loaded.states.clear()
        rows = out[name] = []
        for q in questions:
            if new_process:
                llama.forget()
                _Loaded.states.clear()
            llm = open_llm(settings, db_path=kb.state_db)
            read = type(llama).read_tokens
            began = time.monotonic()
            try:
                answer = await ask(kb, settings, llm, q.question)
            finally:
                await llm.aclose()
            usage = answer.usage
            rows.append({"question": q.question, "prompt_tokens": usage.prompt_tokens,
                         "read": type(llama).read_tokens - read - usage.completion_tokens,
                         "seconds": round(time.monotonic() - began, 1),
                         "load": os.getloadavg()[0],
                         "outcome": score_answer(q, answer).outcome})  # fmt: skip
            print(f"{name:44} read {rows[-1]['read']:5} of {usage.prompt_tokens:5}  "
                  f"{rows[-1]['outcome']:16} {q.question}", flush=True)  # fmt: skip
        llama.set_cache(_Loaded.states)
    return out


def main(argv: list[str] | None = None) -> None:
    from retrieval.golden import load_golden

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--questions", type=int, default=5, help="the first N golden questions")
    ap.add_argument("--tokens-only", action="store_true", help="skip the timed processes")
    ap.add_argument("--times-only", action="store_true", help="skip the token counts")
    args = ap.parse_args(argv)
    questions = load_golden(GOLDEN)[: args.questions]
    home = OUT / "answer_time"
    shutil.rmtree(home, ignore_errors=True)
    results: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cpus": os.cpu_count(),
    }
    if not args.times_only:
        results["tokens"] = asyncio.run(tokens_read(home, questions))
        results["tokens_summary"] = {
            name: {"read_p50": statistics.median(r["read"] for r in rows),
                   "prompt_p50": statistics.median(r["prompt_tokens"] for r in rows),
                   "right": sum(r["outcome"] == "right" for r in rows), "of": len(rows)}
            for name, rows in results["tokens"].items()
        }  # fmt: skip
        print(json.dumps(results["tokens_summary"], indent=1))
    if args.tokens_only:
        (OUT / "answer_time_tokens.json").write_text(json.dumps(results, indent=1) + "\n")
        return
    for mode in ("cli", "serve"):
        notes_as_pages(home / mode)
    results["cli"] = cli_times(home / "cli", questions)
    results["serve"] = serve_times(home / "serve", questions)
    cli = [r["seconds"] for r in results["cli"]]
    warm = [r["seconds"] for r in results["serve"][1:]]
    results["summary"] = {
        "cli_p50": statistics.median(cli),
        "serve_first": results["serve"][0]["seconds"],
        "serve_p50_after_first": statistics.median(warm) if warm else None,
        "load_range": [
            min(r["load"] for r in results["cli"] + results["serve"]),
            max(r["load"] for r in results["cli"] + results["serve"]),
        ],
    }
    (OUT / "answer_time.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(results["summary"]))


if __name__ == "__main__":
    main()
