"""kb-ai's own time per question: every question of a wiki through the real
`retrieval.ask()` in a fresh process, with the time spent inside the fake model taken
out."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench._common import REPO


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
    """A model that answers at once: the first 3 candidates, then after each reading it
    is never enough (a search for the first page's title; one page picked), so every
    question runs all its hops; search terms "release notes" for a question in another
    script than the wiki's; an answer citing the first page read."""
    props = (schema or {}).get("properties", {})
    if "terms" in props:
        return {"terms": ["release notes"]}
    if "enough" in props:
        title = re.search(r"^- \[(.{1,80}?)\]", messages[-1]["content"], re.M)
        return {"enough": False, "search": [title.group(1)] if title else []}
    if stage == "select":
        enum = props["paths"]["items"]["enum"] if props else []
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
                "hops": len(answer.hops),
                "own_per_hop_ms": (wall - llm.inside) * 1e3 / max(len(answer.hops), 1),
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
