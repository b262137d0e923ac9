"""bench/identity: revisions that arrive by another path, and what finding them costs.

1. Revisions, end to end: 100 sources of ../shared/data (the 38 decision records and 62
   MuSiQue paragraphs) compiled, then each revised (one of four ways, from
   bench/identity/threshold.py) and compiled again through another path: another
   folder under the same file name, another folder under a new name, an upload under
   the same name, an upload under a new name (the worker's own way in, with the file
   name the upload came under). Counted: articles the revisions created (target 0),
   how each was recognised, the revisions left as new sources the run names. The
   model is tests/fakes' in-process stand-in (kb_responder), the pipeline the real one.
2. The cost at 10,000 sources: a state.db index over 10,000 raw sources (pairs of
   MuSiQue and HotpotQA passages with words of their own), built once from raw/ (a wiki from before identity),
   then opened as each run opens it, and the identity check of 200 documents (100
   revisions of indexed sources, 100 new): per-source median and 95th percentile.
   Each source is a passage (shared by 3 or 4 sources) and 200 words of its own.

    python -m bench.identity.run [--write]

--write puts the figures in docs/benchmarks-identity.md (with threshold.py's tables).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from contextlib import closing
from pathlib import Path

from bench._common import REPO, load_average, machine
from bench.identity.threshold import DATA, HALVES, WAYS, half_of, revise
from compiler import Compiler
from compiler.identity_index import Arrival, SourceIndex
from compiler.sources import guess_title, source_from_text
from kb_ai.settings import load_settings
from tests.fakes.fake_llm import FakeLLM
from tests.fakes.kb_responder import respond
from wiki import KnowledgeBase, RawSource, list_articles, open_state, write_raw

PATHS = ("another folder, same name", "another folder, new name", "upload, same name",
         "upload, new name")  # fmt: skip


def handler(stage, messages, schema):
    request = {"messages": messages}
    if schema is not None:
        request["response_format"] = {"type": "json_schema", "json_schema": {"schema": schema}}
    text = respond(request).content
    return json.loads(text) if schema is not None else text


def corpus(half: str = "held-out") -> list[tuple[str, str]]:
    """(file name, text) of 100 sources of one half (threshold.py's: the thresholds were
    derived on the dev half): its decision records, then MuSiQue paragraphs."""
    adr = [(p.name, p.read_text(encoding="utf-8"))
           for p in sorted((DATA / "adr_govuk").glob("*.md")) if half_of(p.name) == half]  # fmt: skip
    paragraphs = json.loads((DATA / "musique50" / "musique_corpus.json").read_text())
    seen: set[str] = set()
    notes = []
    for p in paragraphs:
        if p["title"] in seen or len(p["text"]) < 400 or half_of(p["title"]) != half:
            continue
        seen.add(p["title"])
        slug = "-".join(p["title"].lower().split())[:50]
        notes.append((f"{slug}.md", f"# {p['title']}\n\n{p['text']}\n"))
    return (adr + notes)[:100]


async def revisions_end_to_end(root: Path, half: str = "held-out") -> dict:
    kb = KnowledgeBase.init(root / "kb")
    settings = load_settings(kb.root, {"model": "fake/model"}, environ={})
    factory = lambda s, **k: FakeLLM(handler)  # noqa: E731
    docs = corpus(half)
    first = root / "notes"
    first.mkdir()
    for name, text in docs:
        (first / name).write_text(text, encoding="utf-8")
    before = await Compiler(kb, settings, llm_factory=factory).compile_paths([first])
    articles_before = len(list_articles(kb))
    rng = random.Random(25)
    folder_items, uploads = [], []
    plan = []
    for i, (name, text) in enumerate(docs):
        way, path = WAYS[(i // 4) % len(WAYS)], PATHS[i % 4]
        other = docs[(i + 37) % len(docs)][1]
        new_text = revise(text, way, other, rng)
        new_name = name if path.endswith("same name") else f"revised-{i:03d}-{name}"
        plan.append((way, path))
        if path.startswith("another folder"):
            folder = root / "elsewhere" / f"{i:03d}"
            folder.mkdir(parents=True)
            (folder / new_name).write_text(new_text, encoding="utf-8")
            folder_items.append(folder / new_name)
        else:
            origin = f"submitted:{i:016d}"
            # titled as the Submit page titles an upload: its heading, else its file name
            title = guess_title(new_text, Path(new_name).stem)
            src = source_from_text(origin, title, new_text, chunk_chars=settings.chunk_chars,
                                   max_bytes=settings.max_source_bytes)  # fmt: skip
            uploads.append((src, Arrival(name=new_name)))
    started = time.monotonic()
    by_folder = await Compiler(kb, settings, llm_factory=factory).compile_paths(folder_items)
    by_upload = await Compiler(kb, settings, llm_factory=factory).compile_sources(
        [s for s, _ in uploads], arrivals={s.origin: a for s, a in uploads}
    )
    seconds = time.monotonic() - started
    created = by_folder.created + by_upload.created
    ways = Counter(r.way for r in by_folder.revisions + by_upload.revisions)
    maybe = by_folder.maybe_revisions + by_upload.maybe_revisions
    origin_of = {str(p): plan[int(p.parent.name)] for p in folder_items}
    origin_of |= {s.origin: plan[int(s.origin.split(":")[1])] for s, _ in uploads}
    missed = Counter(origin_of[m.origin] for m in maybe)
    return {
        "half": half,
        "sources": len(docs),
        "compiled first": len(before.compiled),
        "articles before": articles_before,
        "articles after": len(list_articles(kb)),
        "created by revisions": len(created),
        "articles created (paths)": sorted(created),
        "recognised": dict(ways),
        "new sources named as maybe revisions": len(maybe),
        "missed by way and path": {f"{w} / {p}": n for (w, p), n in sorted(missed.items())},
        "why they were not taken": dict(Counter(m.reason for m in maybe)),
        "failed": len(by_folder.failed) + len(by_upload.failed),
        "seconds (revisions, stand-in model)": round(seconds, 1),
    }


def ten_thousand(root: Path, n: int = 10_000) -> dict:
    kb = KnowledgeBase.init(root / "kb10k")
    hotpot = json.loads((DATA / "hotpotqa100" / "hotpotqa_train_corpus.json").read_text())
    musique = json.loads((DATA / "musique50" / "musique_corpus.json").read_text())
    passages = [f"{t}. " + "".join(s) for t, s in hotpot.items()]
    passages += [f"{p['title']}. {p['text']}" for p in musique]
    rng = random.Random(10_000)
    vocabulary = sorted({w for p in passages[:400] for w in p.split() if w.isalpha()})

    def notes(k: int) -> str:  # a paragraph of a team's own words, one per source
        return " ".join(rng.choice(vocabulary) for _ in range(k)) + "."

    texts = []
    for i in range(n):
        passage = passages[i % len(passages)]
        texts.append((f"source-{i:05d}", f"# Source {i}\n\n{passage}\n\n{notes(200)}\n"))
    for slug, text in texts:
        write_raw(kb, RawSource(slug, slug, f"/notes/{slug}.md", "note", "x", "2026-01-01", text))
    with closing(open_state(kb)) as conn:
        t0, c0 = time.perf_counter(), time.process_time()
        SourceIndex(kb, conn, {}).sync()
        build, build_cpu = time.perf_counter() - t0, time.process_time() - c0
        opens = []
        for _ in range(5):
            t0 = time.perf_counter()
            index = SourceIndex(kb, conn, {})
            index.sync()  # raw/ listed: nothing to add
            opens.append(time.perf_counter() - t0)
        times, cpu, outcomes = [], [], Counter()
        for j in range(200):
            if j % 2 == 0:
                slug, text = texts[rng.randrange(n)]
                text = revise(text, "one number or word", "", rng)
                name = f"{slug}.md" if j % 4 == 0 else f"moved-{j}.md"
                title = f"Source {int(slug.split('-')[1])}"
            else:
                a, b = rng.sample(range(len(passages)), 2)
                text, name, title = (
                    f"# New {j}\n\n{passages[a]}\n\n{passages[b]}\n",
                    f"new-{j}.md",
                    f"New {j}",
                )
            src = source_from_text(f"/elsewhere/{name}", title, text, chunk_chars=8000,
                                   max_bytes=5_000_000)  # fmt: skip
            t0, c0 = time.perf_counter(), time.process_time()
            found = index.identify(src, Arrival(name=name))
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            outcomes[type(found).__name__ if found is not None else "new"] += 1
    times.sort()
    cpu.sort()
    return {
        "sources": n,
        "index built from raw/ (once)": f"{build:.1f} s ({build_cpu:.1f} s of CPU)",
        "index opened by a run (median of 5)": f"{statistics.median(opens) * 1000:.0f} ms",
        "identity check per source, median": f"{statistics.median(times) * 1000:.2f} ms",
        "identity check per source, 95th percentile": f"{times[int(len(times) * 0.95)] * 1000:.2f} ms",
        "identity check per source, CPU time, median": f"{statistics.median(cpu) * 1000:.2f} ms",
        "outcomes of 100 revisions and 100 new documents": dict(outcomes),
    }


def render(revisions: dict, scale: dict, thresholds: str) -> str:
    m = machine()
    lines = [
        "# Benchmarks: identity (issue 25)",
        "",
        "`python -m bench.identity.run --write` (bench/identity/run.py) and",
        "`python -m bench.identity.threshold` (bench/identity/threshold.py). Measured on "
        f"{m['cores']} cores ({m['cpu']}), Python {m['python']}, load average "
        f"{load_average():.1f} (a shared machine).",
        "",
        "## Revisions through another path",
        "",
        "100 sources of ../shared/data compiled, then each revised and compiled again "
        "through another folder or an upload, under its own file name or a new one; the "
        "stand-in model in process (kb_responder).",
        "",
        "| figure | value |",
        "|---|---|",
        *(f"| {k} | {v} |" for k, v in revisions.items()),
        "",
        "## The identity check at 10,000 sources",
        "",
        "| figure | value |",
        "|---|---|",
        *(f"| {k} | {v} |" for k, v in scale.items()),
        "",
        "## Where the thresholds come from",
        "",
        thresholds,
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--half", choices=HALVES, default="held-out",
                        help="the sources revised (the thresholds come from dev)")  # fmt: skip
    parser.add_argument("--revisions-only", action="store_true",
                        help="only the revisions end to end (no 10,000 sources, no tables)")  # fmt: skip
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        revisions = asyncio.run(revisions_end_to_end(Path(tmp), args.half))
        print(json.dumps(revisions, indent=1))
        if args.revisions_only:
            return
        scale = ten_thousand(Path(tmp))
        print(json.dumps(scale, indent=1))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        from bench.identity.threshold import main as thresholds

        thresholds()
    print(out.getvalue())
    if args.write:
        path = REPO / "docs" / "benchmarks-identity.md"
        page = render(revisions, scale, out.getvalue())
        old = path.read_text(encoding="utf-8") if path.is_file() else ""
        kept = old.find("## Hand edits, then a revision")  # bench/identity/hand_edits.py's
        if kept >= 0:
            page = page.rstrip("\n") + "\n\n" + old[kept:]
        path.write_text(page, encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
