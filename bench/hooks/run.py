"""Benchmark agent capture: the hook's wall time, sessions lost, idle worker runs.

    python -m bench.hooks.run [--hook sh|python] [--sessions 200] [--delay 0.05] [--out FILE]

Each session is a small Codex rollout ended by the real hook command an install writes
(``--hook sh``, the default where /bin/sh exists: ``/bin/sh kb_ai/hooks/kb-ai-hook.sh
--python PY session-end --agent codex``; ``--hook python``: ``python -P -m kb_ai.hooks
session-end --agent codex``), a SessionEnd event on stdin, timed from the parent's spawn
to its exit: interpreter start included. Before each, the bare start of the same
interpreter (``python -P -c pass``, ``/bin/sh -c :``) is timed: the floor. Half the sessions
end on an idle machine, half while two CPU-burning processes run (they stop
themselves). The hooks start workers as they would for an agent; the fake model server
answers every call after ``--delay`` seconds. At the end every session must have been
compiled exactly once (one part, one extract call), and each worker run's last line
("Compiled N queued task(s)") tells whether it compiled anything.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

from kb_ai.hooks.run import POSIX_SH, SHELL_HOOK
from tests.fakes.kb_responder import respond, stage_of
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from wiki import KnowledgeBase, all_sources, open_state


def hook_commands(event: str, agent: str) -> dict[str, list[str]]:
    """The two commands `hooks install` writes for ``event``: the Python hook (the team
    file's and the fallback) and the shell hook (the per-user install's)."""
    args = [event, "--agent", agent]
    return {
        "python": [sys.executable, "-P", "-m", "kb_ai.hooks", *args],
        "sh": [POSIX_SH, str(SHELL_HOOK), "--python", sys.executable, *args],
    }


HOOKS = hook_commands("session-end", "codex")
BARE = {"python": [sys.executable, "-P", "-c", "pass"], "sh": [POSIX_SH, "-c", ":"]}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def p50_p99_ms(**series: list[float]) -> dict[str, float]:
    """``{name}_p50_ms`` and ``{name}_p99_ms`` of each series of seconds, in order."""
    out = {}
    for name, values in series.items():
        out[f"{name}_p50_ms"] = pct(values, 0.5) * 1000
        out[f"{name}_p99_ms"] = pct(values, 0.99) * 1000
    return out


def rollout(path: Path, session_id: str) -> Path:
    def line(kind: str, payload: dict) -> str:
        return json.dumps({"timestamp": "2026-03-01T10:00:00Z", "type": kind, "payload": payload})

    def msg(role: str, text: str, block: str) -> str:
        return line(
            "response_item",
            {"type": "message", "role": role, "content": [{"type": block, "text": text}]},
        )

    path.write_text(
        "\n".join(
            [
                line("session_meta", {"id": session_id, "timestamp": "2026-03-01T10:00:00Z"}),
                msg("user", f"Make the {session_id} report export CSV.", "input_text"),
                msg("assistant", f"The {session_id} report now exports CSV.", "output_text"),
            ]
        )
        + "\n"
    )
    return path


def burn(seconds: float) -> subprocess.Popen:
    code = f"import time\nend = time.time() + {seconds}\nwhile time.time() < end: pass\n"
    return subprocess.Popen([sys.executable, "-c", code])


def end_sessions(
    kb: KnowledgeBase, tmp: Path, ids: list[str], hook: str
) -> tuple[list[float], list[float]]:
    """(the hooks' wall times, the bare interpreter run before each: the floor)."""
    times, bare = [], []
    for sid in ids:
        started = time.perf_counter()
        subprocess.run(BARE[hook], check=True)
        bare.append(time.perf_counter() - started)
        event = json.dumps(
            {
                "session_id": sid,
                "transcript_path": str(rollout(tmp / f"{sid}.jsonl", sid)),
                "cwd": str(kb.root),
                "hook_event_name": "SessionEnd",
            }
        )
        started = time.perf_counter()
        subprocess.run(
            HOOKS[hook], input=event, capture_output=True, text=True, check=True, cwd=kb.root
        )
        times.append(time.perf_counter() - started)
    return times, bare


def worker_busy(kb: KnowledgeBase) -> bool:
    import fcntl
    import os

    fd = os.open(kb.state_dir / "worker.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def run(sessions: int, delay: float, hook: str = "sh") -> dict:
    half = sessions // 2
    with (
        tempfile.TemporaryDirectory() as d,
        FakeOpenAIServer(lambda r: Reply(respond(r).content, delay=delay)) as server,
    ):
        tmp = Path(d)
        kb = KnowledgeBase.init(tmp / "kb")
        with kb.config_path.open("a") as f:
            f.write(
                f'\nmodel = "openai/fake-model"\napi_base = "{server.base_url}"\n'
                'api_key = "sk-bench"\n'
            )
        load_before = os.getloadavg()[0]
        idle, idle_bare = end_sessions(kb, tmp, [f"idle-{i}" for i in range(half)], hook)
        burners = [burn(600), burn(600)]
        try:
            busy, busy_bare = end_sessions(
                kb, tmp, [f"busy-{i}" for i in range(sessions - half)], hook
            )
            load_busy = os.getloadavg()[0]
        finally:
            for b in burners:
                b.kill()
                b.wait()
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline and (
            worker_busy(kb) or list((kb.state_dir / "spool" / "new").glob("*.json"))
        ):
            time.sleep(0.5)
        with closing(open_state(kb)) as conn:
            origins = list(all_sources(conn))
            states = dict(conn.execute("SELECT state, count(*) FROM tasks GROUP BY state"))
        compiled = {o.split("#")[0] for o in origins}
        expected = {f"session:codex:idle-{i}" for i in range(half)} | {
            f"session:codex:busy-{i}" for i in range(sessions - half)
        }
        runs = [
            int(line.split()[1])
            for line in (kb.state_dir / "worker.log").read_text().splitlines()
            if line.startswith("Compiled ")
        ]
        extracts = sum(1 for r in server.requests if stage_of(r) == "extract")
    return {
        "hook": hook,
        "sessions": sessions,
        "load_average_at_start": load_before,
        "load_average_with_burners": load_busy,
        **p50_p99_ms(bare_idle=idle_bare, bare_busy=busy_bare, idle=idle, busy=busy),
        "idle_max_ms": max(idle) * 1000,
        "busy_max_ms": max(busy) * 1000,
        "lost": len(expected - compiled),
        "parts": len(origins),
        "extract_calls": extracts,
        "tasks": states,
        "worker_runs": len(runs),
        "worker_runs_compiling_nothing": sum(1 for n in runs if n == 0),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hook", choices=sorted(HOOKS), default="sh")
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--out", help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    result = run(args.sessions, args.delay, args.hook)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
