"""A corpus read whole against the same questions asked of the whole wiki, and against
the corpus selected inside (a budget too small to read it whole).

The 40 GOV.UK architecture decision records of ../shared/data/adr_govuk are compiled
with the stand-in model server (tests/fakes, OpenAI wire format over loopback HTTP), a
corpus of the decision articles is built, and three cross-record questions are asked
through the real CLI three ways. Measured per question: model calls, prompt characters
sent, pages read, distinct records cited, and for each way the share of the answer
prompt that is the same byte for byte across the three questions (what a provider's
prompt cache can hold). The stand-in's answers are mechanical: the citation counts say
what reached the answer, not how well a real model synthesises.

    python -m bench.corpus.primed
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from bench._common import REPO, load_average
from bench._kb import kb_ai, last_json
from tests.fakes.kb_responder import respond, stage_of
from tests.fakes.openai_server import FakeOpenAIServer

DATA = REPO.parent / "shared" / "data" / "adr_govuk"
OUT = REPO / "bench" / "out" / "corpus"
QUESTIONS = [
    "What recurs in our decisions about puppet?",
    "What did we decide overall about terraform?",
    "Which decisions concern DNS and the hosting of services?",
]


MODEL = "openai/fake-model"
ENV: dict[str, str] = {}  # the stand-in server's address, once it runs


def cli(kb: Path, *args: str, **env: str) -> dict:
    """``kb-ai <args>`` in a subprocess, as a user runs it; its JSON when --json."""
    proc, _ = kb_ai(*args, model=MODEL, kb=kb, **ENV, **env)
    if proc.returncode:
        raise SystemExit(proc.stderr[-2000:])
    return last_json(proc) if "--json" in args else {}


def common_head(texts: list[str]) -> int:
    head = os.path.commonprefix(texts)
    return len(head)


def run_way(kb: Path, server: FakeOpenAIServer, extra: list[str], env: dict[str, str]) -> dict:
    rows, answers = [], []
    for q in QUESTIONS:
        asked = len(server.requests)
        data = cli(kb, "ask", "--json", *extra, q, **env)
        sent = server.requests[asked:]
        answer = [r for r in sent if stage_of(r) == "answer"]
        answers += ["".join(m["content"] for m in answer[-1]["messages"])] if answer else []
        rows.append(
            {
                "calls": len(sent),
                "prompt_chars": sum(len(m["content"]) for r in sent for m in r["messages"]),
                "read": len(data["read"]),
                "cited": len({c["path"] for c in data["citations"]}),
            }
        )
    if len(answers) > 1:
        shared = f"{common_head(answers) / max(min(map(len, answers)), 1):.1%}"
    else:
        shared = f"n/a ({len(answers)} answer call)"
    return {"rows": rows, "shared_head": shared}


def main_() -> None:
    if not DATA.is_dir():
        raise SystemExit(f"{DATA} is not here (the shared data)")
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    with FakeOpenAIServer(respond) as server:
        ENV.update({"KB_AI_API_BASE": server.base_url, "KB_AI_API_KEY": "sk-bench"})
        kb = OUT / "kb"
        cli(kb, "init", "--no-hint")
        started = time.monotonic()
        cli(kb, "compile", str(DATA))
        compiled = time.monotonic() - started
        built = cli(kb, "corpus", "build", "decisions", "--type", "decision", "--json")
        ways = {
            "whole wiki": run_way(kb, server, [], {}),
            "corpus, read whole": run_way(kb, server, ["--corpus", "decisions"], {}),
            "corpus, selected inside": run_way(
                kb, server, ["--corpus", "decisions"], {"KB_AI_CORPUS_BUDGET_TOKENS": "2000"}
            ),
        }
    articles = len(list((kb / "wiki").rglob("*.md")))
    print(f"load {load_average():.2f}; {articles} articles compiled in {compiled:.1f} s; "
          f"corpus decisions: {len(built['articles'])} articles")  # fmt: skip
    print(
        "| way | calls / question | prompt chars / question | pages read | records cited | answer prompt head shared by the 3 questions |"
    )  # noqa: E501
    print("|---|---|---|---|---|---|")
    for name, way in ways.items():
        rows = way["rows"]

        def mean(key: str, rows: list[dict] = rows) -> str:
            return f"{sum(r[key] for r in rows) / len(rows):,.1f}"

        print(f"| {name} | {mean('calls')} | {mean('prompt_chars')} | {mean('read')} | "
              f"{mean('cited')} | {way['shared_head']} |")  # fmt: skip


if __name__ == "__main__":
    main_()
