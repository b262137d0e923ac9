"""Benchmark the prompt hook: its wall time from spawn to exit, interpreter start included.

    python -m bench.hooks.prompt [--prompts 100] [--out FILE]

A knowledge base holds the real decision records of ../shared/data/adr_govuk, one
article each (title and text from the record, written without a model), with its
master index and search index, and the hint file the shell hook reads
(kb_ai/hooks/hintfile.py). Each prompt is a question built from a record's title
words, sent as the agent sends it (JSON on stdin) to both hooks `hooks install` writes:
``python -P -m kb_ai.hooks prompt`` and ``/bin/sh kb_ai/hooks/kb-ai-hook.sh --python PY
prompt`` (one awk run). Half the prompts run on an idle machine, half beside two
CPU-burning processes; before each hook its bare start is timed (``python -P -c pass``,
``/bin/sh -c :``), the floor. Also checked on every reply: at most three pages, titles
with paths, at most 300 bytes.

Agreement: before the timing, every prompt, and a second set of prompts made from the
records' bodies (a sentence of each: words the titles do not have), goes to the shell
hook with no Python to hand over to and to the Python hook; the replies must be the
same line. Counted: the prompts whose replies are equal, and those awk answered itself.

``--corpus musique``: the same over the 1,890 paragraphs of ../shared/data/musique50 as
articles, asked its 50 real questions (agreement measured on those); with the time and
size of writing the hint file for a wiki of that size.
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
from bench.hooks.run import BARE, burn, hook_commands, p50_p99_ms
from kb_ai.hooks.hintfile import is_fresh, write_hint
from kb_ai.hooks.run import POSIX_SH, SHELL_HOOK
from wiki import Article, KnowledgeBase, build_catalog, open_state, write_article, write_indexes
from wiki.indexing import refresh_search_index
from wiki.slugs import slugify

ADR = REPO.parent / "shared" / "data" / "adr_govuk"
MUSIQUE = REPO.parent / "shared" / "data" / "musique50"
HOOKS = hook_commands("prompt", "claude-code")
# the shell hook with no Python behind it: a reply is then awk's own
AWK_ONLY = [POSIX_SH, str(SHELL_HOOK), "--python", "/nonexistent/python", "prompt"]


def adr_articles() -> tuple[list[Article], list[str], list[str]]:
    """The decision records as articles; their titles; a sentence of each body."""
    articles, titles, sentences = [], [], []
    for path in sorted(ADR.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        title = next((ln[2:].strip() for ln in text.splitlines() if ln.startswith("# ")), path.stem)
        body = text.split("\n", 1)[-1]
        summary = " ".join(body.split())[:180]
        articles.append(Article(f"wiki/decision/{slugify(title)}.md", title, "decision",
                                summary, [], [], "2026-01-01", "2026-01-01", body))  # fmt: skip
        titles.append(title)
        prose = [p for p in re.split(r"(?<=[.?!])\s+", " ".join(body.split())) if len(p) > 60]
        sentences.append(prose[len(prose) // 2][:300] if prose else title)
    return articles, titles, sentences


def musique_articles() -> tuple[list[Article], list[str]]:
    """The 1,890 MuSiQue paragraphs as articles, and the 50 questions (never tuned on)."""
    corpus = json.loads((MUSIQUE / "musique_corpus.json").read_text(encoding="utf-8"))
    articles = [
        Article(
            f"wiki/topic/{slugify(e['title'])[:60]}-{i}.md",
            e["title"],
            "topic",
            e["text"][:180],
            [],
            [],
            "2026-01-01",
            "2026-01-01",
            e["text"],
        )  # fmt: skip
        for i, e in enumerate(corpus)
    ]
    questions = json.loads((MUSIQUE / "musique_dev50.json").read_text(encoding="utf-8"))
    return articles, [q["question"] for q in questions]


def make_kb(root: Path, articles: list[Article]) -> tuple[KnowledgeBase, dict]:
    """The knowledge base of ``articles``, indexed, with its hint file; and what writing
    the hint file took."""
    kb = KnowledgeBase.init(root)
    for article in articles:
        write_article(kb, article)
    write_indexes(kb, build_catalog(kb))
    with closing(open_state(kb)) as conn:
        refresh_search_index(kb, conn)
    time.sleep(0.1)  # the hint file's time must follow its sources'
    started = time.perf_counter()
    gen = write_hint(kb.root)
    took = time.perf_counter() - started
    if gen is None or not is_fresh(kb.root):
        sys.exit("the hint file could not be written")
    files = [f for f in gen.rglob("*") if f.is_file()]
    return kb, {
        "hint_file_write_ms": took * 1000,
        "hint_file_bytes": sum(f.stat().st_size for f in files),
        "hint_file_files": len(files),
    }


def reply(command: list[str], kb: KnowledgeBase, prompt: str) -> str:
    event = json.dumps({"prompt": prompt, "cwd": str(kb.root), "session_id": "bench"})
    return subprocess.run(
        command, input=event, capture_output=True, text=True, cwd=kb.root, check=True
    ).stdout


def agreement(kb: KnowledgeBase, prompts: list[str]) -> dict[str, int]:
    """Of the ASCII prompts, how many get the same reply from awk alone as from the
    Python hook, and how many of those name pages; the others are the Python hook's."""
    ascii_prompts = [p for p in prompts if p.isascii()]
    same = answered = 0
    for prompt in ascii_prompts:
        by_awk, by_python = reply(AWK_ONLY, kb, prompt), reply(HOOKS["python"], kb, prompt)
        same += by_awk == by_python
        answered += by_awk == by_python != ""
    return {
        "ascii_prompts": len(ascii_prompts),
        "same": same,
        "same_and_named_pages": answered,
        "beyond_ascii_for_python": len(prompts) - len(ascii_prompts),
    }


def ask(
    kb: KnowledgeBase, prompts: list[str], hook: str
) -> tuple[list[float], list[float], list[str]]:
    times, bare, outs = [], [], []
    for prompt in prompts:
        started = time.perf_counter()
        subprocess.run(BARE[hook], check=True)
        bare.append(time.perf_counter() - started)
        event = json.dumps({"prompt": prompt, "cwd": str(kb.root), "session_id": "bench"})
        started = time.perf_counter()
        done = subprocess.run(HOOKS[hook], input=event, capture_output=True, text=True, cwd=kb.root)
        times.append(time.perf_counter() - started)
        outs.append(done.stdout.rstrip("\n"))
    return times, bare, outs


def timed(
    kb: KnowledgeBase, prompts: list[str]
) -> dict[str, tuple[list[float], list[float], list[str]]]:
    """Both hooks on each prompt in turn (so both meet the same load), by hook."""
    runs: dict[str, tuple[list[float], list[float], list[str]]] = {h: ([], [], []) for h in HOOKS}
    for prompt in prompts:
        for hook in HOOKS:
            for into, got in zip(runs[hook], ask(kb, [prompt], hook), strict=True):
                into += got
    return runs


def own(times: list[float], bare: list[float]) -> list[float]:
    return [t - b for t, b in zip(times, bare, strict=True)]


def run(count: int, corpus: str = "adr") -> dict:
    with tempfile.TemporaryDirectory() as d:
        if corpus == "adr":
            articles, titles, sentences = adr_articles()
            prompts = [
                f"how did we decide about {' '.join(re.findall(r'[A-Za-z]{4,}', t)[:3]).lower()}?"
                for t in (titles * (count // len(titles) + 1))[:count]
            ]
            sets = {"title_prompts": prompts, "body_prompts": sentences}
        else:
            articles, questions = musique_articles()
            prompts = (questions * (count // len(questions) + 1))[:count]
            sets = {"questions": questions}
        kb, hint_file = make_kb(Path(d) / "kb", articles)
        agree = {f"agreement_{name}": agreement(kb, ps) for name, ps in sets.items()}
        half = count // 2
        load_before = load_average()
        idle = timed(kb, prompts[:half])
        burners = [burn(1200), burn(1200)]
        try:
            busy = timed(kb, prompts[half:])
            load_busy = load_average()
        finally:
            for b in burners:
                b.kill()
                b.wait()
    out: dict = {
        "corpus": corpus,
        "articles": len(articles),
        "prompts": count,
        **hint_file,
        **agree,
        "load_average_at_start": load_before,
        "load_average_with_burners": load_busy,
    }
    for hook in HOOKS:
        (i_times, i_bare, i_out), (b_times, b_bare, b_out) = idle[hook], busy[hook]
        outs = i_out + b_out
        named = [re.findall(r'"[^"]+" \((wiki/[^)]+\.md)\)', o) for o in outs]
        out[hook] = {
            **p50_p99_ms(bare_idle=i_bare, bare_busy=b_bare, idle=i_times, busy=b_times),
            "busy_max_ms": max(b_times) * 1000,
            # the hook's own cost: its time less the bare start timed just before it
            **p50_p99_ms(own_idle=own(i_times, i_bare), own_busy=own(b_times, b_bare)),
            "replies_with_pages": sum(1 for n in named if n),
            "most_pages": max((len(n) for n in named), default=0),
            "most_bytes": max((len(o.encode()) for o in outs), default=0),
        }
    shell_outs = idle["sh"][2] + busy["sh"][2]
    python_outs = idle["python"][2] + busy["python"][2]
    out["timed_replies_same"] = sum(a == b for a, b in zip(shell_outs, python_outs, strict=True))
    out["machine"] = machine()
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prompts", type=int, default=100)
    parser.add_argument(
        "--corpus",
        choices=("adr", "musique"),
        default="adr",
        help="the 38 decision records (default), or the 1,890 MuSiQue paragraphs asked its 50 questions",
    )
    parser.add_argument("--out", help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    data = ADR if args.corpus == "adr" else MUSIQUE
    if not data.is_dir():
        sys.exit(f"{data} is not here: the shared test data is needed")
    text = json.dumps(run(args.prompts, args.corpus), indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    os.environ.setdefault("KB_AI_NOTICE_SHOWN", "1")
    main()
