"""Documents benchmark: conversion time per file type and per page (the 117-page thesis),
extraction calls and prompt characters for the thesis against its page count, and peak
memory of a conversion.

    python -m bench.documents.run            # writes docs/benchmarks-documents.md
    python -m bench.documents.run --quick    # one repetition, prints only

Files are read in place from shared/data/documents. Calls and prompt characters come
from compiling the thesis with tests/fakes' in-process model (kb_responder), which
answers at once: the figures count what kb-ai sends, not how fast a model answers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data" / "documents"
DOC = REPO / "docs" / "benchmarks-documents.md"
THESIS = "GeoTopo-komprimiert.pdf"
SKIP = {".txt"}

# VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the forking parent.
MEMORY_PROBE = """
import re, sys
from compiler.documents import prepare_document
def hwm():
    return int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read()).group(1))
data = open(sys.argv[1], "rb").read()
before = hwm()
prepare_document(sys.argv[1], data, chunk_chars=24000)
print(before, hwm())
"""


def convert_times(reps: int) -> list[dict]:
    from compiler.documents import convert_document, format_of
    from kb_ai.errors import DocumentError

    rows = []
    for path in sorted(DATA.iterdir()):
        if path.suffix in SKIP:
            continue
        data = path.read_bytes()
        times, outcome, units, chars = [], "", 0, 0
        for _ in range(reps):
            started = time.perf_counter()
            try:
                doc = convert_document(data, path.name)
                outcome, units, chars = "ok", doc.units, len(doc.text)
            except DocumentError as exc:
                outcome = f"refused: {exc.cause}"
            times.append(time.perf_counter() - started)
        rows.append({
            "file": path.name, "type": format_of(path.name) or path.suffix, "bytes": len(data),
            "seconds": statistics.median(times), "outcome": outcome, "units": units,
            "chars": chars,
        })  # fmt: skip
    return rows


def thesis_calls(chunk_chars: int) -> dict:
    from compiler import Compiler
    from kb_ai.settings import load_settings
    from tests.compiler.conftest import responder_handler
    from tests.fakes.fake_llm import FakeLLM
    from wiki import KnowledgeBase

    with tempfile.TemporaryDirectory() as tmp:
        kb = KnowledgeBase.init(Path(tmp) / "kb")
        settings = replace(
            load_settings(kb.root, {"model": "fake/model"}, environ={}), chunk_chars=chunk_chars
        )
        llm = FakeLLM(responder_handler)
        compiler = Compiler(kb, settings, llm_factory=lambda s, **k: llm)
        started = time.perf_counter()
        result = asyncio.run(compiler.compile_paths([str(DATA / THESIS)]))
        elapsed = time.perf_counter() - started
        assert result.compiled, result.failed
        by_stage: dict[str, list[int]] = {}
        for call in llm.calls:
            size = sum(len(m.get("content") or "") for m in call.messages)
            by_stage.setdefault(call.stage, []).append(size)
        text = next((kb.root / "raw").glob("*.md")).read_text(encoding="utf-8")
    return {
        "chunk_chars": chunk_chars,
        "calls": {s: len(v) for s, v in by_stage.items()},
        "prompt_chars": {s: sum(v) for s, v in by_stage.items()},
        "source_chars": len(text),
        "seconds": elapsed,
    }


def peak_memory(names: list[str]) -> list[dict]:
    out = []
    for name in names:
        proc = subprocess.run(
            [sys.executable, "-c", MEMORY_PROBE, str(DATA / name)],
            capture_output=True, text=True, cwd=REPO, check=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
        before, after = (int(x) for x in proc.stdout.split())
        out.append({"file": name, "rss_before_kib": before, "rss_after_kib": after})
    return out


def write_doc(rows: list[dict], calls: list[dict], memory: list[dict], pages: int) -> str:
    thesis = next(r for r in rows if r["file"] == THESIS)
    lines = [
        "# Benchmark: documents",
        "",
        f"`python -m bench.documents.run`, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
        f"Python {platform.python_version()}, {platform.machine()}, 2 CPUs shared with other "
        "sessions (figures vary by tens of percent between runs).",
        "",
        "## Conversion, per file (median of the runs)",
        "",
        "| file | type | bytes | seconds | outcome | pages/slides/sheets | characters |",
        "|---|---|---:|---:|---|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['file']} | {r['type']} | {r['bytes']:,} | {r['seconds']:.3f} | {r['outcome']} "
            f"| {r['units'] or ''} | {r['chars']:,} |"
        )
    lines += [
        "",
        f"The thesis: {pages} pages in {thesis['seconds']:.2f} s, "
        f"**{thesis['seconds'] / pages * 1000:.1f} ms per page**.",
        "",
        "## The thesis through compile: calls against pages",
        "",
        "| chunk_chars | extract calls | classify | write | extract prompt chars | all prompt chars | source chars | pages |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in calls:
        n, p = c["calls"], c["prompt_chars"]
        lines.append(
            f"| {c['chunk_chars']:,} | {n.get('extract', 0)} | {n.get('classify', 0)} | "
            f"{n.get('write', 0)} | {p.get('extract', 0):,} | {sum(p.values()):,} | "
            f"{c['source_chars']:,} | {pages} |"
        )
    lines += [
        "",
        "## Peak memory of one conversion (resident set, its own process)",
        "",
        "Before: the process with kb-ai's compiler imported; peak: its largest resident set "
        "after converting and splitting the file, the converter's own imports included "
        "(MarkItDown's pull in onnxruntime and numpy through magika, whether used or not).",
        "",
        "| file | before (MiB) | peak (MiB) | added (MiB) |",
        "|---|---:|---:|---:|",
    ]
    for m in memory:
        b, a = m["rss_before_kib"] / 1024, m["rss_after_kib"] / 1024
        lines.append(f"| {m['file']} | {b:.0f} | {a:.0f} | {a - b:.0f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rows = convert_times(1 if args.quick else 3)
    pages = next(r for r in rows if r["file"] == THESIS)["units"]
    calls = [thesis_calls(24_000), thesis_calls(6_000)]
    memory = peak_memory([THESIS, "test.docx", "test.pptx", "test.xlsx", "test_serp.html"])
    print(json.dumps({"convert": rows, "calls": calls, "memory": memory}, indent=1))
    if not args.quick:
        DOC.write_text(write_doc(rows, calls, memory, pages) + _selection(), encoding="utf-8")
        print(f"wrote {DOC}")


def _selection() -> str:
    """The sections other benchmarks keep beside this one (converter choice, isolation)."""
    out = ""
    for name in ("selection.md", "isolation.md", "material.md"):
        path = Path(__file__).with_name(name)
        out += "\n" + path.read_text(encoding="utf-8") if path.is_file() else ""
    return out


if __name__ == "__main__":
    main()
