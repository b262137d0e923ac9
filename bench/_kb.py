"""kb-ai as a benchmark runs it: the CLI in a subprocess, as a user would, its JSON
result, and what the knowledge base it leaves was compiled from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import frontmatter

from bench._common import REPO


def kb_ai(
    *args: str, model: str, kb: Path, **env_extra: str
) -> tuple[subprocess.CompletedProcess, float]:
    """Run ``kb-ai <args>`` on ``kb`` with ``model``: the finished process and its seconds."""
    env = {**os.environ, "KB_AI_MODEL": model, "KB_AI_DIR": str(kb), **env_extra}
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "kb_ai", *args], env=env, capture_output=True, text=True, cwd=REPO
    )
    return proc, time.monotonic() - started


def last_json(proc: subprocess.CompletedProcess) -> dict[str, Any]:
    """The last JSON line a ``--json`` command printed."""
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"no JSON from kb-ai (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(lines[-1])


def articles_from(kb: Path) -> dict[str, set[str]]:
    """Article path -> the file names of the notes it was compiled from."""
    origins = {}
    for raw in (kb / "raw").glob("*.md"):
        origins[f"raw/{raw.name}"] = Path(str(frontmatter.load(raw).get("origin", ""))).name
    out: dict[str, set[str]] = {}
    for article in (kb / "wiki").rglob("*.md"):
        sources = frontmatter.load(article).get("sources") or []
        out[article.relative_to(kb).as_posix()] = {origins.get(s, s) for s in sources}
    return out
