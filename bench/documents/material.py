"""The writer's material budget (write_material_chars, max_prompt_chars): one synthetic
source of 1 and 5 MB compiled with a stand-in model that fills every extraction to the
schema's limits (bench/compile/large_source.py's), in-process, with the default settings.
Reports the largest write prompt against max_prompt_chars (4,000,000: a prompt over it
is refused and the source gets no article) and what the writer was shown.

    python -m bench.documents.material           # writes bench/documents/material.md
                                                 # and its section of docs/benchmarks-documents.md
    python -m bench.documents.material --quick   # 1 MB only, prints only
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import re
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from bench.compile.large_source import bounded_write, full_extraction, synthetic_source
from bench.documents.isolation import save_section

MB = 1_000_000
SECTION = "## The writer's material budget (write_material_chars)"
RESULT = Path(__file__).with_name("material.md")


def handler(stage, messages, schema):  # noqa: ANN001, ANN201 - FakeLLM's handler
    from tests.fakes import kb_responder

    request = {"messages": messages}
    if schema is not None:
        request["response_format"] = {"type": "json_schema", "json_schema": {"schema": schema}}
    if stage == "extract":
        return full_extraction(request)
    if stage == "write":
        return bounded_write(request)
    content = kb_responder.respond(request).content
    return json.loads(content) if schema is not None else content


def compile_one(size: int) -> dict:
    from compiler import Compiler
    from kb_ai.settings import load_settings
    from tests.fakes.fake_llm import FakeLLM
    from wiki import KnowledgeBase

    with tempfile.TemporaryDirectory() as tmp:
        kb = KnowledgeBase.init(Path(tmp) / "kb")
        settings = load_settings(kb.root, {"model": "fake/model"}, environ={})
        settings = replace(settings, max_source_bytes=2 * size + MB)
        src = Path(tmp) / "log.md"
        src.write_text(synthetic_source(size), encoding="utf-8")
        llm = FakeLLM(handler)
        started = time.perf_counter()
        result = asyncio.run(
            Compiler(kb, settings, llm_factory=lambda s, **k: llm).compile_paths([str(src)])
        )
        seconds = time.perf_counter() - started
        writes = [sum(len(m.get("content") or "") for m in c.messages) for c in llm.calls
                  if c.stage == "write"]  # fmt: skip
        cut = [re.search(r"material cut to ([\d,]+) of ([\d,]+)", n) for n in result.checks]
        shown = [
            (int(m.group(1).replace(",", "")), int(m.group(2).replace(",", ""))) for m in cut if m
        ]
        return {
            "bytes": src.stat().st_size,
            "extract_calls": sum(1 for c in llm.calls if c.stage == "extract"),
            "write_calls": len(writes),
            "largest_write_prompt": max(writes, default=0),
            "limit": settings.max_prompt_chars,
            "shown": max((s for s, _ in shown), default=None),
            "material": max((t for _, t in shown), default=None),
            "articles": len(result.created) + len(result.updated),
            "failed": [f.error[:160] for f in result.failed],
            "seconds": seconds,
        }


def write(rows: list[dict]) -> str:
    lines = [
        SECTION,
        "",
        f"`python -m bench.documents.material`, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, Python "
        f"{platform.python_version()}, 2 CPUs shared with other sessions. One synthetic "
        "source (bench/compile/large_source.py's operations log), extractions filled to the "
        "schema's limits, default settings (max_prompt_chars 4,000,000, write_material_chars "
        "300,000), tests/fakes' model in-process (the figures are what kb-ai sends).",
        "",
        "| source | extract calls | write calls | largest write prompt (chars) | material shown / merged (chars) | articles | failed | seconds |",
        "|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in rows:
        shown = f"{r['shown']:,} / {r['material']:,}" if r["shown"] else "all"
        failed = "; ".join(r["failed"]) or "none"
        lines.append(
            f"| {r['bytes'] / MB:.1f} MB | {r['extract_calls']} | {r['write_calls']} | "
            f"{r['largest_write_prompt']:,} | {shown} | {r['articles']} | {failed} | "
            f"{r['seconds']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rows = [compile_one(size * MB) for size in ((1,) if args.quick else (1, 5))]
    print(json.dumps(rows, indent=1))
    if not args.quick:
        save_section(SECTION, write(rows), RESULT)


if __name__ == "__main__":
    main()
