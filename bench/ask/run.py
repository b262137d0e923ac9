"""Ask benchmark: the selection prompt's size and kb-ai's own time per question on
synthetic wikis of 100 to 100,000 articles, and the wall time of a whole `kb-ai ask`.

    python -m bench.ask.run            # 100, 1,000, 10,000, 100,000 articles; writes docs/benchmarks-ask.md
    python -m bench.ask.run --quick    # 100 and 1,000 articles, fewer runs; prints only

Own time: each size runs in a fresh Python process (so the first question pays what a
first question pays: templates, SQLite, cold caches in the process). Every question goes
through the real `retrieval.ask()` with tests/fakes' FakeLLM answering at once; the time
spent inside the fake's `complete`/`stream` (its handler, its JSON parsing, its usage
count) is measured and subtracted, so what is left is kb-ai's own work: loading the
catalog, the lexical shortlist, rendering prompts, reading pages, the second hop,
checking citations. The selection prompt is then rebuilt with `Asker.selection_prompt`
(untimed) and counted with `estimate_tokens` (what kb-ai budgets with) and tiktoken's
cl100k_base (for reference).

Whole process: `kb-ai --kb DIR ask --json QUESTION` as a subprocess against
FakeOpenAIServer with tests/fakes/kb_responder (real HTTP, answers at once), each run a
different question (so the response cache never answers), after one unrecorded warm-up.

Wikis are generated once and kept in bench/out/ask/ (git-ignored): articles written with
`wiki.write_article` (up to 10,000 articles; the 100,000 one writes the same frontmatter
+ body with `dump_document` and a plain write, skipping the per-file fsync), the master
index with `wiki.write_indexes`, the search index with `wiki.indexing.refresh_search_index`.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "bench" / "out" / "ask"
DOC = REPO / "docs" / "benchmarks-ask.md"
GEN_VERSION = 1  # bump when the generator changes: cached wikis are then rebuilt

SIZES = (100, 1_000, 10_000, 100_000)
QUICK_SIZES = (100, 1_000)
PROCESS_SIZES = (1_000, 10_000, 100_000)
QUICK_PROCESS_SIZES = (1_000,)
DIRECT_WRITE_ABOVE = 10_000  # larger wikis skip write_article's fsyncs
TARGET_OWN_MS = 50.0
TARGET_OWN_SIZE = 10_000
TARGET_PROCESS_S = 2.0

# -- the synthetic wiki -----------------------------------------------------------------

# Common words of a software team's notes, most frequent first (the Zipf head).
COMMON_WORDS = """
service data team api release deploy database cache config user request queue
error test build pipeline cluster server client job schema migration index storage
network token auth session latency timeout retry backup metric alert log dashboard
incident review owner budget cost contract vendor customer invoice report search feature
flag branch merge version package dependency library container image node region zone
replica shard partition topic consumer producer event message webhook endpoint route gateway
proxy balancer certificate secret key rotation policy permission role audit compliance privacy
retention archive export import sync batch stream scheduler worker cron task ticket
sprint roadmap milestone estimate capacity quota limit threshold rollback canary rollout hotfix
patch upgrade downtime maintenance window oncall runbook postmortem escalation severity priority sla
slo uptime throughput memory disk cpu bandwidth encryption compression serialization format payload
field column table row query transaction lock deadlock consistency availability durability failover
replication snapshot restore checkpoint ledger billing payment refund discount pricing plan tier
trial onboarding signup login password profile notification email sms push template locale
translation currency timezone calendar report analytics experiment cohort funnel conversion churn retention
segment dashboard warehouse lake etl model training inference embedding prompt evaluation dataset
label annotation benchmark
"""
COMMON = list(dict.fromkeys(COMMON_WORDS.split()))
VERBS_WORDS = """
stores sends reads writes checks validates caches retries routes signs encrypts compresses
schedules batches replicates archives exports imports publishes consumes rejects throttles rotates audits
monitors indexes migrates
"""
VERBS = VERBS_WORDS.split()
TYPES = (
    ("concept", 5),
    ("decision", 3),
    ("entity", 2),
    ("howto", 2),
    ("incident", 1),
    ("meeting", 1),
)
ONSETS_WORDS = """
b br c ch d dr f fl g gr h j
k kl l m n p pl pr r s sk st
t tr v w z sh th
"""
ONSETS = ONSETS_WORDS.split()
VOWELS = ["a", "e", "i", "o", "u", "a", "e", "o", "ai", "ei", "ou", "ia"]
CODAS = ["", "", "n", "r", "l", "s", "t", "x", "m", "nd", "rk", "st"]


def pseudo_words(rng: random.Random, n: int, avoid: set[str]) -> list[str]:
    """n distinct made-up words (project names, jargon), none of them in ``avoid``."""
    out: dict[str, None] = {}
    while len(out) < n:
        word = "".join(
            rng.choice(ONSETS) + rng.choice(VOWELS) + rng.choice(CODAS)
            for _ in range(rng.choice((2, 2, 3)))
        )
        if 5 <= len(word) <= 12 and word not in avoid:
            out[word] = None
    return list(out)


class Zipf:
    """Draws words with frequency ~ 1 / rank^s."""

    def __init__(self, words: list[str], s: float = 1.05) -> None:
        self.words = words
        self.cum = list(itertools.accumulate(1.0 / (r + 1) ** s for r in range(len(words))))

    def draw(self, rng: random.Random, k: int) -> list[str]:
        return rng.choices(self.words, cum_weights=self.cum, k=k)


def generate(size: int, seed: int = 7) -> tuple[list[dict], list[dict]]:
    """The articles of a wiki of ``size`` (plain dicts) and the questions asked of it."""
    from wiki.slugs import slugify, unique_slug

    rng = random.Random(seed * 1_000_003 + size)
    vocab_size = 1_500 + int(60 * size**0.5)  # grows with the wiki, as real jargon does
    made_up = pseudo_words(rng, vocab_size + max(30, size // 6) + 200, set(COMMON))
    jargon = made_up[:vocab_size]
    names = [w.capitalize() for w in made_up[vocab_size : vocab_size + max(30, size // 6)]]
    needle_words = made_up[vocab_size + max(30, size // 6) :]
    words = Zipf(COMMON + jargon)
    types = [t for t, _ in TYPES]
    weights = [w for _, w in TYPES]

    heads: list[dict] = []
    taken: dict[str, set[str]] = {t: set() for t in types}
    for _ in range(size):
        kind = rng.choices(types, weights)[0]
        name = (
            names[min(int(rng.paretovariate(1.2)) - 1, len(names) - 1)]
            if rng.random() < 0.3
            else rng.choice(names)
        )
        topic = " ".join(words.draw(rng, rng.choice((1, 2, 2, 3))))
        if kind == "decision":
            title = f"Use {rng.choice(jargon).capitalize()} for {name} {topic}"
        elif kind == "incident":
            title = f"{name} {topic} outage {rng.randint(2019, 2025)}-{rng.randint(1, 12):02d}"
        elif kind == "howto":
            title = f"How to {rng.choice(('set up', 'rotate', 'debug', 'scale', 'migrate'))} {name} {topic}"
        elif kind == "meeting":
            title = f"{name} {topic} sync {rng.randint(1, 52)}"
        else:
            title = f"{name} {topic}"
        slug = unique_slug(slugify(title), taken[kind])
        taken[kind].add(slug)
        heads.append({"path": f"wiki/{kind}/{slug}.md", "title": title, "type": kind, "name": name})

    def sentence(name: str) -> str:
        a, b, c, d = words.draw(rng, 4)
        shape = rng.randrange(5)
        if shape == 0:
            s = f"{name} {rng.choice(VERBS)} the {a} {b} before the {c} {d} runs"
        elif shape == 1:
            s = f"When the {a} {b} is over its {c}, the {d} {rng.choice(VERBS)} it again"
        elif shape == 2:
            s = f"We keep the {a} and the {b} {c} apart so that {name} never blocks the {d}"
        elif shape == 3:
            s = f"The {a} {rng.choice(VERBS)} every {rng.randint(2, 90)} minutes and the {b} {c} {rng.choice(VERBS)} the rest of the {d}"
        else:
            s = f"Ask the {name} {a} owners before changing the {b} {c}, because the {d} depends on it"
        return s[0].upper() + s[1:] + "."

    needles = set(rng.sample(range(size), min(size, 12)))
    articles, questions = [], []
    for i, head in enumerate(heads):
        name = head["name"]
        a, b, c = words.draw(rng, 3)
        summary = f"How {name} {rng.choice(VERBS)} the {a} {b} for the {c} team, and what to check when it fails."
        while len(summary) < 100:
            summary = summary[:-1] + f" or the {words.draw(rng, 1)[0]}."
        tags = list(dict.fromkeys(words.draw(rng, rng.randint(1, 3))))
        keys = []
        body = [f"# {head['title']}", "", "## Overview", ""]
        body.append(" ".join(sentence(name) for _ in range(rng.randint(3, 6))))
        body += ["", "## Details", ""]
        for _ in range(rng.randint(2, 4)):
            body.append(" ".join(sentence(name) for _ in range(rng.randint(3, 6))))
            body.append("")
        needle = None
        if i in needles:
            word = needle_words.pop()
            value = f"{rng.randint(3, 97)} {rng.choice(('seconds', 'replicas', 'days', 'percent'))}"
            needle = {"word": word, "value": value}
            body.insert(
                len(body) - 2, f"The {word} limit of {name} is {value}, set after the last review."
            )
        if rng.random() < 0.4:  # a table whose first cells become the catalog keys
            keys = list(
                dict.fromkeys(
                    f"{w}_{v}" for w, v in zip(words.draw(rng, 4), words.draw(rng, 4), strict=True)
                )
            )
            body += ["| setting | value |", "|---|---|"]
            body += [f"| {k} | {rng.randint(1, 500)} |" for k in keys]
            body.append("")
        links = rng.sample(heads, min(len(heads), rng.randint(1, 3)))
        body += ["## Related", ""] + [f"- [[{h['title']}]]" for h in links if h is not head]
        articles.append(
            {**head, "summary": summary, "tags": tags, "keys": keys, "body": "\n".join(body) + "\n"}
        )
        if needle:
            questions.append(
                {
                    "kind": "body fact",
                    "q": f"What is the {needle['word']} limit of {name}?",
                    "target": head["path"],
                }
            )
    for head in rng.sample(heads, min(len(heads), 5)):
        questions.append(
            {
                "kind": "title",
                "q": f"What do we know about {head['title'].lower()}?",
                "target": head["path"],
            }
        )
    for _ in range(3):
        a, b = words.draw(rng, 2)
        questions.append(
            {
                "kind": "vague",
                "q": f"Why do we retry the {a} when the {b} times out?",
                "target": None,
            }
        )
    questions.append(
        {"kind": "not covered", "q": "What is the lunch menu on Fridays?", "target": None}
    )
    questions.append({"kind": "not covered (zh)", "q": "部署流程是什么？", "target": None})
    return articles, questions


def build_wiki(size: int) -> Path:
    """The cached wiki of ``size`` articles (generated on first use)."""
    from wiki import Article, KnowledgeBase, cut_summary, entry_for, write_article, write_indexes
    from wiki.articles import article_text
    from wiki.indexing import refresh_search_index
    from wiki.state import open_state

    root = OUT / f"wiki-{size}-v{GEN_VERSION}"
    done = root / ".bench-complete.json"
    if done.is_file():
        return root
    if root.exists():
        shutil.rmtree(root)
    started = time.perf_counter()
    articles, questions = generate(size)
    generated = time.perf_counter()
    kb = KnowledgeBase.init(root)
    written = []
    stamp = "2025-01-15"
    direct = size > DIRECT_WRITE_ABOVE
    for a in articles:
        article = Article(
            path=a["path"],
            title=a["title"],
            type=a["type"],
            summary=a["summary"],
            tags=a["tags"],
            sources=[f"raw/notes/{a['path'].rsplit('/', 1)[-1]}"],
            created=stamp,
            updated=stamp,
            body=a["body"],
            keys=a["keys"],
        )
        if direct:  # plain writes: no per-file fsync and rename for 100,000 files
            article.summary = cut_summary(article.summary)
            path = root / article.path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(article_text(article), encoding="utf-8")
            written.append(article)
        else:
            written.append(write_article(kb, article))
    wrote = time.perf_counter()
    write_indexes(kb, [entry_for(a) for a in written])
    indexed = time.perf_counter()
    with closing(open_state(kb)) as conn:
        refresh_search_index(kb, conn)
    searched = time.perf_counter()
    (root / "questions.json").write_text(json.dumps(questions, indent=1, ensure_ascii=False))
    info = {
        "size": size,
        "generate_s": generated - started,
        "write_s": wrote - generated,
        "write": "dump_document + plain write" if direct else "write_article",
        "indexes_s": indexed - wrote,
        "search_index_s": searched - indexed,
        "master_index_bytes": kb.master_index_path.stat().st_size,
        "state_db_bytes": kb.state_db.stat().st_size,
    }
    done.write_text(json.dumps(info, indent=1))
    return root


# -- own time, in a child process per size ------------------------------------------------


def _answer_reply(messages: list[dict]) -> str:
    user = messages[-1]["content"]
    m = re.search(r'<page title="(.*?)" path="(.*?)">\n(.*?)\n</page>', user, re.S)
    if not m:
        return "The wiki does not cover this question."
    first = next(
        (line for line in m.group(3).splitlines() if line and not line.startswith("#")), ""
    )
    return f"{first.split('. ')[0]}. [{m.group(1)}]({m.group(2)})"


def fake_handler(stage: str, messages: list[dict], schema: dict | None) -> Any:
    """A model that answers at once: the first 3 candidates, one further page on the second
    hop, and an answer citing the first page read."""
    if stage == "select":
        enum = schema["properties"]["paths"]["items"]["enum"] if schema else []
        hop = "Further pages:" in messages[-1]["content"]
        return {"paths": enum[:1] if hop else enum[:3]}
    return _answer_reply(messages)


class TimedLLM:
    """Wraps an LLM; adds up the wall time spent inside its complete() and stream()."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.model = inner.model
        self.usage = inner.usage
        self.inside = 0.0
        self.inside_cpu = 0.0
        self.calls = 0

    async def complete(self, messages: list[dict], **kwargs: Any) -> Any:
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return await self.inner.complete(messages, **kwargs)
        finally:
            self.inside += time.perf_counter() - t0
            self.inside_cpu += time.process_time() - c0
            self.calls += 1

    async def stream(self, messages: list[dict], **kwargs: Any):
        self.calls += 1
        gen = self.inner.stream(messages, **kwargs).__aiter__()
        while True:
            t0, c0 = time.perf_counter(), time.process_time()
            try:
                item = await gen.__anext__()
            except StopAsyncIteration:
                return
            finally:
                self.inside += time.perf_counter() - t0
                self.inside_cpu += time.process_time() - c0
            yield item

    async def aclose(self) -> None:
        pass


def child(size: int, root: Path) -> dict:
    """Run every question of the wiki at ``root`` once, in this (fresh) process."""
    t0 = time.perf_counter()
    from kb_ai.settings import load_settings
    from retrieval import Asker, Catalog, ask, estimate_tokens, read_page
    from tests.fakes.fake_llm import FakeLLM
    from wiki import KnowledgeBase

    import_s = time.perf_counter() - t0
    kb = KnowledgeBase.open(root)
    settings = load_settings(root, environ={})
    questions = json.loads((root / "questions.json").read_text(encoding="utf-8"))
    encoding = _cl100k()
    loop = asyncio.new_event_loop()
    rows = []
    for q in questions:
        llm = TimedLLM(FakeLLM(fake_handler))

        async def run(llm: TimedLLM = llm, question: str = q["q"]) -> tuple[Any, float, float]:
            start, cpu = time.perf_counter(), time.process_time()
            answer = await ask(kb, settings, llm, question)
            return answer, time.perf_counter() - start, time.process_time() - cpu

        answer, wall, cpu = loop.run_until_complete(run())
        # Untimed: the parts, and the selection prompt as the model received it.
        p0 = time.perf_counter()
        catalog = Catalog.load(kb)
        p1 = time.perf_counter()
        messages, paths, shortlisted = Asker(kb, settings, llm).selection_prompt(q["q"], catalog)
        p2 = time.perf_counter()
        for path in answer.read:
            read_page(kb, path, settings.read_chars)
        p3 = time.perf_counter()
        text = "".join(m["content"] for m in messages)
        rows.append(
            {
                **q,
                "wall_ms": wall * 1e3,
                "model_ms": llm.inside * 1e3,
                "own_ms": (wall - llm.inside) * 1e3,
                "own_cpu_ms": (cpu - llm.inside_cpu) * 1e3,
                "calls": llm.calls,
                "catalog_load_ms": (p1 - p0) * 1e3,
                "selection_prompt_ms": (p2 - p1) * 1e3,
                "read_pages_ms": (p3 - p2) * 1e3,
                "tokens_estimate": estimate_tokens(text),
                "tokens_cl100k": len(encoding.encode(text)) if encoding else None,
                "candidates": len(paths),
                "shortlisted": shortlisted,
                "target_in_candidates": (q["target"] in paths) if q["target"] else None,
                "cited": [c.path for c in answer.citations],
                "read": len(answer.read),
            }
        )
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()
    return {
        "size": size,
        "import_ms": import_s * 1e3,
        "budget": settings.selection_budget_tokens,
        "catalog_tokens": Catalog.load(kb).text_tokens,
        "rows": rows,
    }


def _cl100k():
    """tiktoken's cl100k_base from the copy litellm ships (this machine is offline), or None."""
    import importlib.util

    try:
        import tiktoken
    except ImportError:
        return None
    spec = importlib.util.find_spec("litellm")
    if spec and spec.submodule_search_locations and "TIKTOKEN_CACHE_DIR" not in os.environ:
        bundled = Path(spec.submodule_search_locations[0]) / "litellm_core_utils" / "tokenizers"
        os.environ["TIKTOKEN_CACHE_DIR"] = str(bundled)
    try:
        return tiktoken.get_encoding("cl100k_base")
    except Exception:  # noqa: BLE001 - a reference count only; the report says n/a
        return None


def own_time(size: int, root: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "bench.ask.run", "--child", str(size), "--kb", str(root)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"child for {size} failed:\n{proc.stderr}")
    return json.loads(proc.stdout)


# -- whole process -------------------------------------------------------------------------


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    return time.perf_counter() - t0, proc


def whole_process(sizes: list[int], roots: dict[int, Path], runs: int) -> dict:
    from tests.fakes import kb_responder
    from tests.fakes.openai_server import FakeOpenAIServer

    kb_ai = str(Path(sys.executable).parent / "kb-ai")
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("KB_AI_")}
    model_s = [0.0]
    lock = threading.Lock()

    def responder(request: dict) -> Any:
        t0 = time.perf_counter()
        try:
            return kb_responder.respond(request)
        finally:
            with lock:
                model_s[0] += time.perf_counter() - t0

    result: dict[str, Any] = {"ask": {}}
    with FakeOpenAIServer(responder) as server:
        env = {
            **base_env,
            "KB_AI_MODEL": "openai/fake",
            "KB_AI_API_BASE": server.base_url,
            "KB_AI_API_KEY": "x",
        }
        for size in sizes:
            questions = json.loads((roots[size] / "questions.json").read_text(encoding="utf-8"))
            asked = [q["q"] for q in questions if q["kind"] in ("body fact", "title")]
            nonce = datetime.now(UTC).strftime("%H%M%S")  # a new question each bench run: no cache
            walls, model, cited = [], [], 0
            for i in range(runs + 1):
                question = f"{asked[i % len(asked)]} ({nonce}-{i})"
                before, model_before = len(server.requests), model_s[0]
                wall, proc = _timed(
                    [kb_ai, "--kb", str(roots[size]), "ask", "--json", question], env
                )
                if proc.returncode != 0:
                    raise SystemExit(f"kb-ai ask failed at {size}: {proc.stderr}")
                out = json.loads(proc.stdout)
                if len(server.requests) - before < 2:
                    raise SystemExit(f"kb-ai ask at {size} did not reach the model (cached?)")
                if i == 0:
                    continue  # warm-up: page cache, .pyc files
                walls.append(wall)
                model.append(model_s[0] - model_before)
                cited += bool(out["citations"])
            result["ask"][size] = {"walls": walls, "model": model, "cited": cited}
            # Where the time goes, once: imports (-X importtime) with litellm absent.
            question = f"{asked[0]} (importtime {nonce})"
            _, proc = _timed(
                [
                    sys.executable,
                    "-X",
                    "importtime",
                    "-m",
                    "kb_ai",
                    "--kb",
                    str(roots[size]),
                    "ask",
                    "--json",
                    question,
                ],
                env,
            )
            result["ask"][size]["imports"] = _imports(proc.stderr)
    result["help"] = [_timed([kb_ai, "--help"], base_env)[0] for _ in range(runs)]
    result["python"] = [_timed([sys.executable, "-c", "pass"], base_env)[0] for _ in range(runs)]
    result["import_openai"] = _timed([sys.executable, "-c", "import openai"], base_env)[0]
    result["import_litellm"] = _timed([sys.executable, "-c", "import litellm"], base_env)[0]
    return result


def _imports(stderr: str) -> dict:
    """Top-level imports by cumulative time, from -X importtime output."""
    tops: dict[str, float] = {}
    for line in stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)", line)
        if m and len(m.group(2)) == 1:  # a top-level import
            name = m.group(3).split(".")[0]
            tops[name] = tops.get(name, 0.0) + int(m.group(1)) / 1e6
    return {
        "litellm": "litellm" in tops,
        "openai": "openai" in tops,
        "total_s": sum(tops.values()),
        "top": sorted(tops.items(), key=lambda kv: -kv[1])[:8],
    }


# -- report --------------------------------------------------------------------------------


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))]


def render(builds: dict[int, dict], own: list[dict], proc: dict | None, quick: bool) -> str:
    import sqlite3 as _sqlite

    lines = [
        "## Ask: selection prompt, own time, whole process",
        "",
        f"{datetime.now(UTC).date().isoformat()}; Python {platform.python_version()}, SQLite "
        f"{_sqlite.sqlite_version}, {platform.machine()}, {os.cpu_count()} CPUs (1-minute load "
        f"average {LOAD_AT_START:.1f} when timing began; other work shares the machine); warm OS page "
        f"cache. `python -m bench.ask.run{' --quick' if quick else ''}` (bench/ask/run.py).",
        "",
        "Synthetic wikis: six article types; titles from a made-up project name plus Zipf-drawn "
        "words (common software-team words, then jargon growing with the wiki); summaries of "
        "100-130 characters; tags; keys from a settings table in 40% of articles; bodies of "
        "about 120-350 words with 1-3 [[wikilinks]] (so the second hop runs); 12 body-only "
        '"needle" facts per wiki. Not committed to git (ask reads no git).',
        "",
        "| articles | written by | write (s) | master index | catalog tokens | search index (s) | state.db |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in own:
        b = builds[r["size"]]
        lines.append(
            f"| {r['size']:,} | {b['write']} | {b['write_s']:.1f} | {b['master_index_bytes'] / 1e6:.2f} MB "
            f"| {r['catalog_tokens']:,} | {b['search_index_s']:.1f} | {b['state_db_bytes'] / 1e6:.0f} MB |"
        )
    n = len(own[0]["rows"]) if own else 0
    lines += [
        "",
        "### Selection prompt and own time per question",
        "",
        f"{n} questions per size (12 body-only facts, 5 about a title, 3 vague, 2 not covered, "
        "one of them in Chinese), each through `retrieval.ask()` with an in-process fake model "
        "that answers at once (3 pages picked, 1 more on the second hop, an answer citing the "
        "first page). Own time = wall time of `ask()` minus the time inside the fake's "
        "`complete`/`stream`. Each size runs in a fresh process: *first* is its first question "
        "(one-time costs: template compilation, SQLite connection and page cache, lazy "
        "imports), *steady* the other questions. Prompt tokens: `estimate_tokens` of the "
        "select messages (what the budget is checked with) and tiktoken cl100k_base. A question "
        "no article shares a word with gets 0 candidates and is answered as not covered "
        "without a model call.",
        "",
        "| articles | shortlisted | candidates min / median | target in candidates | prompt tokens, estimate (max) | cl100k (max) | cl100k / estimate | budget |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in own:
        rows = r["rows"]
        targeted = [x for x in rows if x["target_in_candidates"] is not None]
        cl = [x["tokens_cl100k"] for x in rows if x["tokens_cl100k"] is not None]
        ratio = (
            f"{statistics.median(x['tokens_cl100k'] / x['tokens_estimate'] for x in rows):.2f}"
            if cl
            else "n/a"
        )
        lines.append(
            f"| {r['size']:,} | {sum(x['shortlisted'] for x in rows)}/{len(rows)} "
            f"| {min(x['candidates'] for x in rows)} / {statistics.median(x['candidates'] for x in rows):.0f} "
            f"| {sum(x['target_in_candidates'] for x in targeted)}/{len(targeted)} "
            f"| {max(x['tokens_estimate'] for x in rows):,} | {f'{max(cl):,}' if cl else 'n/a'} "
            f"| {ratio} | {r['budget']:,} |"
        )
    lines += [
        "",
        "Own time per question, and its parts measured again after each question (untimed "
        "there): `Catalog.load`, `Asker.selection_prompt` (shortlist search + prompt), "
        "`read_page` of the pages read; *fake model* is the time subtracted. *CPU* is the "
        "process CPU time of the same steady questions (`time.process_time`, fake's share "
        "subtracted): less sensitive than wall time to other work on the machine.",
        "",
        "| articles | first (ms) | steady p50 (ms) | p95 (ms) | max (ms) | CPU p50 (ms) | CPU p95 (ms) | Catalog.load p50 (ms) | selection_prompt p50 (ms) | read pages p50 (ms) | fake model p50 (ms) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in own:
        rows = r["rows"]
        steady = [x["own_ms"] for x in rows[1:]]
        cpu = [x["own_cpu_ms"] for x in rows[1:]]
        lines.append(
            f"| {r['size']:,} | {rows[0]['own_ms']:.1f} | {statistics.median(steady):.1f} "
            f"| {pct(steady, 95):.1f} | {max(steady):.1f} "
            f"| {statistics.median(cpu):.1f} | {pct(cpu, 95):.1f} "
            f"| {statistics.median(x['catalog_load_ms'] for x in rows):.1f} "
            f"| {statistics.median(x['selection_prompt_ms'] for x in rows):.1f} "
            f"| {statistics.median(x['read_pages_ms'] for x in rows):.1f} "
            f"| {statistics.median(x['model_ms'] for x in rows):.2f} |"
        )
    lines += [
        "",
        "Importing kb-ai's ask path (`retrieval`, `kb_ai.settings`, `wiki`) in the "
        "fresh process, before the first question: "
        + ", ".join(f"{r['import_ms']:.0f} ms ({r['size']:,})" for r in own)
        + ".",
    ]
    if proc:
        runs = len(next(iter(proc["ask"].values()))["walls"]) if proc["ask"] else 0
        lines += [
            "",
            "### Whole `kb-ai ask` process",
            "",
            f"`kb-ai --kb DIR ask --json QUESTION` as a subprocess, {runs} run(s) per size after "
            "one warm-up, each a different question (the response cache never answers: every "
            "run reached the server), against tests/fakes' FakeOpenAIServer on loopback with "
            "kb_responder (real HTTP, OpenAI wire format, no delay). Env KB_AI_MODEL=openai/fake, "
            "KB_AI_API_BASE, KB_AI_API_KEY: the plain-httpx fast path. *Fake model* is the "
            "time the responder spent building its replies, inside the wall time.",
            "",
            "| command | articles | median (s) | min (s) | max (s) | fake model median (ms) | litellm imported |",
            "|---|---|---|---|---|---|---|",
        ]
        for size, r in proc["ask"].items():
            w = r["walls"]
            lines.append(
                f"| `kb-ai ask --json` | {int(size):,} | {statistics.median(w):.2f} | {min(w):.2f} "
                f"| {max(w):.2f} | {statistics.median(r['model']) * 1e3:.0f} "
                f"| {'yes' if r['imports']['litellm'] else 'no'} |"
            )
        for label, key in (("`kb-ai --help`", "help"), ("`python -c pass`", "python")):
            w = proc[key]
            lines.append(
                f"| {label} | - | {statistics.median(w):.2f} | {min(w):.2f} | {max(w):.2f} | - | - |"
            )
        lines.append(
            f'| `python -c "import openai"` (once) | - | {proc["import_openai"]:.2f} | | | - | - |'
        )
        lines.append(
            f'| `python -c "import litellm"` (once) | - | {proc["import_litellm"]:.2f} | | | - | yes |'
        )
        first = next(iter(proc["ask"].items()))
        top = ", ".join(f"{name} {s * 1e3:.0f} ms" for name, s in first[1]["imports"]["top"][:6])
        lines += [
            "",
            f"Imports of one `kb-ai ask` process ({int(first[0]):,} articles, "
            f"`python -X importtime`, top level, cumulative): {top}; all top-level imports "
            f"{first[1]['imports']['total_s'] * 1e3:.0f} ms.",
        ]
    lines += ["", "### Targets", ""]
    within = all(x["tokens_estimate"] <= r["budget"] for r in own for x in r["rows"])
    worst = max((x["tokens_estimate"], r["size"]) for r in own for x in r["rows"])
    counted = [
        (x["tokens_cl100k"], r["size"]) for r in own for x in r["rows"] if x["tokens_cl100k"]
    ]
    line = (
        f"- Selection prompt within the budget ({own[0]['budget']:,} tokens) at every size: "
        f"**{'met' if within else 'not met'}** as kb-ai counts (`estimate_tokens`): largest "
        f"{worst[0]:,} ({worst[1]:,} articles)."
    )
    if counted:
        over = sorted({size for n, size in counted if n > own[0]["budget"]})
        top = max(counted)
        line += (
            f" Counted with cl100k_base: **{'not met' if over else 'met'}**; largest "
            f"{top[0]:,} ({top[1]:,} articles)"
            + (
                f", over the budget at {', '.join(f'{s:,}' for s in over)} articles."
                if over
                else "."
            )
        )
    lines.append(line)
    at = next((r for r in own if r["size"] == TARGET_OWN_SIZE), None)
    if at:
        steady = [x["own_ms"] for x in at["rows"][1:]]
        p95 = pct(steady, 95)
        cpu = [x["own_cpu_ms"] for x in at["rows"][1:]]
        lines.append(
            f"- Own time under {TARGET_OWN_MS:.0f} ms at {TARGET_OWN_SIZE:,} articles (wall, "
            f"steady p95): **{'met' if p95 < TARGET_OWN_MS else 'not met'}**; steady p50 "
            f"{statistics.median(steady):.1f} ms, p95 {p95:.1f} ms, max {max(steady):.1f} ms "
            f"(CPU p50 {statistics.median(cpu):.1f} ms, p95 {pct(cpu, 95):.1f} ms); first "
            f"question {at['rows'][0]['own_ms']:.1f} ms."
        )
    else:
        lines.append(f"- Own time at {TARGET_OWN_SIZE:,} articles: not measured in this run.")
    if proc and proc["ask"]:
        worst_p = max((statistics.median(r["walls"]), int(s)) for s, r in proc["ask"].items())
        lines.append(
            f"- Whole `kb-ai ask` under {TARGET_PROCESS_S:.0f} s: "
            f"**{'met' if worst_p[0] < TARGET_PROCESS_S else 'not met'}**; slowest median "
            f"{worst_p[0]:.2f} s ({worst_p[1]:,} articles)."
        )
    return "\n".join(lines) + "\n"


LOAD_AT_START = os.getloadavg()[0]


def wait_for_quiet(limit_s: float, below: float = 1.0) -> float:
    """Wait (up to limit_s) until the 1-minute load average is under ``below``: timings on
    a 2-core machine shared with other work double under load. Returns the load then."""
    deadline = time.monotonic() + limit_s
    load = os.getloadavg()[0]
    while load >= below and time.monotonic() < deadline:
        print(f"load average {load:.1f}: waiting for a quieter machine", file=sys.stderr)
        time.sleep(15)
        load = os.getloadavg()[0]
    return load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 and 1,000 articles; prints only")
    parser.add_argument("--sizes", help="comma-separated wiki sizes (default: all, or quick's)")
    parser.add_argument("--runs", type=int, help="kb-ai ask runs per size (default 5, quick 2)")
    parser.add_argument(
        "--out",
        type=Path,
        help=f"write the Markdown here (default {DOC.relative_to(REPO)}; none with --quick)",
    )
    parser.add_argument(
        "--wait", type=float, default=600.0, help="seconds to wait for load average < 1 (0: none)"
    )
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--kb", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.kb), ensure_ascii=False))
        return

    sizes = (
        [int(s) for s in args.sizes.split(",")]
        if args.sizes
        else list(QUICK_SIZES if args.quick else SIZES)
    )
    process_sizes = [
        s for s in (QUICK_PROCESS_SIZES if args.quick else PROCESS_SIZES) if s in sizes
    ]
    runs = args.runs or (2 if args.quick else 5)
    roots, builds = {}, {}
    for size in sizes:
        t0 = time.perf_counter()
        roots[size] = build_wiki(size)
        builds[size] = json.loads((roots[size] / ".bench-complete.json").read_text())
        print(
            f"wiki {size:,}: ready in {time.perf_counter() - t0:.1f} s "
            f"(built: write {builds[size]['write_s']:.1f} s, search index "
            f"{builds[size]['search_index_s']:.1f} s)",
            file=sys.stderr,
        )
    global LOAD_AT_START
    LOAD_AT_START = wait_for_quiet(args.wait) if args.wait else os.getloadavg()[0]
    own = []
    for size in sizes:
        own.append(own_time(size, roots[size]))
        print(f"own time {size:,}: done", file=sys.stderr)
    proc = whole_process(process_sizes, roots, runs) if process_sizes else None
    fragment = render(builds, own, proc, args.quick)
    print(fragment)
    out = args.out or (None if args.quick else DOC)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(fragment, encoding="utf-8")
        print(f"written to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
