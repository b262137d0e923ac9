"""The wall time of a whole `kb-ai ask` process against the fake model server, and
where its start-up goes (imports)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench._common import REPO


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
