"""Replay the shared agent sessions in order and watch the lessons they teach.

    python -m bench.lessons.replay [--out FILE]

The sessions of ../shared/data/transcripts (Claude Code JSONL, Claude Code terminal
captures, SWE-agent trajectories) are sorted by the day each started (as its transcript
states it; an undated one by its file's name, after the dated ones) and compiled one
run each, in that order, through the application layer, with the stand-in model
(tests/fakes/kb_responder.py, real HTTP on loopback). The stand-in extracts what a
model would, mechanically: the user's sentences with always/never/don't/must as rules,
each failed tool call with the next call as its fix, sentences naming a convention.

After each session: the lessons it showed (sightings), how many were new and how many
merged into a lesson already known, the lessons by where they stand on that session's
day, and the session-start snapshot as built that day.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections import Counter
from datetime import date
from pathlib import Path

from bench._common import REPO, load_average, machine
from compiler.transcripts import parse
from kb_ai.hooks.snapshot import build_snapshot
from kb_ai.lessons import Rules, read_lessons, standing
from kb_ai.service import open_kb
from kb_ai.service.compiling import compile_paths
from kb_ai.settings import load_settings
from tests.fakes.kb_responder import respond
from tests.fakes.openai_server import FakeOpenAIServer
from wiki import KnowledgeBase

DATA = REPO.parent / "shared" / "data" / "transcripts"
FOLDERS = {"claude_code": "*.jsonl", "claude_code_terminal": "day-*.md", "swe_agent": "*.traj"}


def sessions() -> list[tuple[str, Path]]:
    """(the day it started or "", path) of every session, in replay order."""
    found = []
    for folder, pattern in FOLDERS.items():
        for path in sorted((DATA / folder).glob(pattern)):
            try:
                started = parse(path.read_bytes(), path.name).started_at or ""
            except Exception:  # noqa: BLE001 - not a transcript kb-ai reads: left out
                continue
            found.append((started[:10], path))
    return sorted(found, key=lambda t: (t[0] == "", t[0], t[1].name))


async def replay(root: Path) -> dict:
    kb = KnowledgeBase.init(root / "kb")
    steps = []
    with FakeOpenAIServer(respond) as server:
        settings = load_settings(
            kb.root,
            {"model": "openai/fake-model", "api_base": server.base_url, "api_key": "sk-bench"},
            environ={},
        )
        okb = open_kb(settings=settings)
        rules = Rules.of(settings)
        last_day = date(2000, 1, 1)
        for started, path in sessions():
            result = await compile_paths(okb, [path])
            day = date.fromisoformat(started) if started else last_day
            last_day = max(last_day, day)
            shown = result.lessons_found
            lessons = read_lessons(kb.root)
            stands = Counter(standing(lesson, rules, day).state for lesson in lessons)
            snapshot = build_snapshot(kb.root, today=day)
            steps.append(
                {
                    "session": f"{path.parent.name}/{path.name}",
                    "day": started or "undated",
                    "compiled": len(result.compiled),
                    "failed": [f.error for f in result.failed],
                    "sightings": shown,
                    "new": len(result.lessons_new),
                    "merged": shown - len(result.lessons_new),
                    "seen_again": len(result.lessons_seen),
                    "lessons": len(lessons),
                    "standing": dict(sorted(stands.items())),
                    "snapshot": snapshot,
                }
            )
        final = sorted(
            (standing(lesson, rules, last_day) for lesson in read_lessons(kb.root)),
            key=lambda s: (-s.lesson.seen, -s.confidence, s.lesson.id),
        )
    return {
        "sessions": len(steps),
        "load_average": load_average(),
        "steps": steps,
        "surest": [
            {
                "kind": s.lesson.kind,
                "seen": s.lesson.seen,
                "confidence": s.confidence,
                "state": s.state,
                "text": s.lesson.text[:160],
            }  # fmt: skip
            for s in final[:10]
        ],
        "seen_counts": dict(sorted(Counter(s.lesson.seen for s in final).items())),
        # every lesson more than one session showed: to check by eye that they are one
        "merged_across_sessions": [
            {
                "text": s.lesson.text[:160],
                "seen": s.lesson.seen,
                "confidence": s.confidence,
                "sessions": [raw.removeprefix("raw/")[:40] for raw in s.lesson.sessions],
            }  # fmt: skip
            for s in final
            if len(s.lesson.sessions) > 1
        ],
        "machine": machine(),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    if not DATA.is_dir():
        sys.exit(f"{DATA} is not here: the shared test data is needed")
    with tempfile.TemporaryDirectory() as d:
        result = asyncio.run(replay(Path(d)))
    text = json.dumps(result, indent=2, ensure_ascii=False)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
