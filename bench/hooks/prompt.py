"""Benchmark the prompt hook: its wall time from spawn to exit, interpreter start included.

    python -m bench.hooks.prompt [--prompts 100] [--out FILE]

A knowledge base holds the real decision records of ../shared/data/adr_govuk, one
article each (title and text from the record, written without a model), with its
master index and search index. Each prompt is a question built from a record's title
words, sent as the agent sends it (JSON on stdin) to ``python -P -m kb_ai.hooks
prompt``. Half the prompts run on an idle machine, half beside two CPU-burning
processes; before each the bare interpreter (``python -P -c pass``) is timed, the floor.
Also checked on every reply: at most three pages, titles with paths, at most 300 bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

from bench._common import REPO, load_average, machine
from bench.hooks.run import BARE, burn, p50_p99_ms
from wiki import Article, KnowledgeBase, build_catalog, open_state, write_article, write_indexes
from wiki.indexing import refresh_search_index
from wiki.slugs import slugify

ADR = REPO.parent / "shared" / "data" / "adr_govuk"
HOOK = [sys.executable, "-P", "-m", "kb_ai.hooks", "prompt", "--agent", "claude-code"]


def make_kb(root: Path) -> tuple[KnowledgeBase, list[str]]:
    kb = KnowledgeBase.init(root)
    titles = []
    for path in sorted(ADR.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        title = next((ln[2:].strip() for ln in text.splitlines() if ln.startswith("# ")), path.stem)
        body = text.split("\n", 1)[-1]
        summary = " ".join(body.split())[:180]
        write_article(kb, Article(f"wiki/decision/{slugify(title)}.md", title, "decision",
                                  summary, [], [], "2026-01-01", "2026-01-01", body))  # fmt: skip
        titles.append(title)
    write_indexes(kb, build_catalog(kb))
    with closing(open_state(kb)) as conn:
        refresh_search_index(kb, conn)
    return kb, titles


def ask(kb: KnowledgeBase, prompts: list[str]) -> tuple[list[float], list[float], list[str]]:
    times, bare, outs = [], [], []
    for prompt in prompts:
        started = time.perf_counter()
        subprocess.run(BARE["python"], check=True)
        bare.append(time.perf_counter() - started)
        event = json.dumps({"prompt": prompt, "cwd": str(kb.root), "session_id": "bench"})
        started = time.perf_counter()
        done = subprocess.run(HOOK, input=event, capture_output=True, text=True, cwd=kb.root)
        times.append(time.perf_counter() - started)
        outs.append(done.stdout.rstrip("\n"))
    return times, bare, outs


def own(times: list[float], bare: list[float]) -> list[float]:
    return [t - b for t, b in zip(times, bare, strict=True)]


def run(count: int) -> dict:
    with tempfile.TemporaryDirectory() as d:
        kb, titles = make_kb(Path(d) / "kb")
        prompts = [
            f"how did we decide about {' '.join(re.findall(r'[A-Za-z]{4,}', t)[:3]).lower()}?"
            for t in (titles * (count // len(titles) + 1))[:count]
        ]
        half = count // 2
        load_before = load_average()
        idle, idle_bare, idle_out = ask(kb, prompts[:half])
        burners = [burn(600), burn(600)]
        try:
            busy, busy_bare, busy_out = ask(kb, prompts[half:])
            load_busy = load_average()
        finally:
            for b in burners:
                b.kill()
                b.wait()
    outs = idle_out + busy_out
    named = [re.findall(r'"[^"]+" \((wiki/[^)]+\.md)\)', o) for o in outs]
    return {
        "articles": len(titles),
        "prompts": count,
        "load_average_at_start": load_before,
        "load_average_with_burners": load_busy,
        **p50_p99_ms(bare_idle=idle_bare, bare_busy=busy_bare, idle=idle, busy=busy),
        "busy_max_ms": max(busy) * 1000,
        # the hook's own cost: its time less the bare start timed just before it
        **p50_p99_ms(own_idle=own(idle, idle_bare), own_busy=own(busy, busy_bare)),
        "replies_with_pages": sum(1 for n in named if n),
        "most_pages": max((len(n) for n in named), default=0),
        "most_bytes": max((len(o.encode()) for o in outs), default=0),
        "machine": machine(),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prompts", type=int, default=100)
    parser.add_argument("--out", help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    if not ADR.is_dir():
        sys.exit(f"{ADR} is not here: the shared test data is needed")
    text = json.dumps(run(args.prompts), indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    os.environ.setdefault("KB_AI_NOTICE_SHOWN", "1")
    main()
