"""Helpers every benchmark shares: where the repository is, the machine it runs on, its load."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@contextmanager
def burners(n: int) -> Iterator[None]:
    """``n`` CPU-burning processes meanwhile: the loaded figure (two on these two cores)."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def load_average() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


def machine() -> dict[str, str]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        from importlib.metadata import version

        litellm_version = version("litellm")
    except Exception:  # noqa: BLE001
        litellm_version = "?"
    git = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    return {
        "cores": str(os.cpu_count()),
        "cpu": cpu or platform.processor() or "?",
        "python": platform.python_version(),
        "os": f"{platform.system()} {platform.release()}",
        "litellm": litellm_version,
        "git": git.removeprefix("git version "),
    }
