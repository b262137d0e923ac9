"""`kb-ai eval`: a team's golden questions asked through the same path as every answer
(kb_ai.service.asking, the configured model), scored (retrieval/scores.py), kept in the
knowledge base and compared with the last run of the same set.

Runs are kept under ``.kb-ai/eval/<set>/`` (not versioned, like state.db), each as a
JSON report and a Markdown one named by the time it started; the set is the golden
file's name without its extension. The web Status page shows each set's last run.
"""

from __future__ import annotations

import json
import random
import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kb_ai.errors import KbAiError, UsageError
from kb_ai.service.asking import ask
from kb_ai.service.eval_report import markdown_report
from kb_ai.service.opened import OpenKb
from retrieval.golden import GoldenQuestion, load_golden
from retrieval.scores import (
    Comparison,
    Scored,
    compare,
    error_scored,
    mean_faithfulness,
    score_answer,
    score_of,
    totals,
)
from wiki import KnowledgeBase, atomic_write_text

__all__ = ["EvalRun", "evaluate", "last_runs"]

EVAL_DIR = "eval"
_SET = re.compile(r"[^\w.-]+")


@dataclass
class EvalRun:
    """One run of a golden set: each question scored, and how it compares."""

    set: str
    file: str
    model: str
    started_at: str
    scored: list[Scored]
    sample: int | None = None
    seed: int = 0
    margin: float = 0.0
    comparison: Comparison | None = None
    saved: list[str] = field(default_factory=list)  # the reports written, KB-relative

    @property
    def score(self) -> float:
        return score_of(self.scored)

    @property
    def regressed(self) -> bool:
        """Whether the score fell by more than the margin since the run compared with."""
        return self.comparison is not None and self.comparison.drop > self.margin + 1e-9

    def as_dict(self) -> dict[str, Any]:
        return {
            "set": self.set,
            "file": self.file,
            "model": self.model,
            "started_at": self.started_at,
            "sample": self.sample,
            "seed": self.seed,
            "score": self.score,
            "faithfulness": mean_faithfulness(self.scored),
            "totals": totals(self.scored),
            "margin": self.margin,
            "previous": self.comparison.as_dict() if self.comparison else None,
            "regression": self.regressed,
            "questions": [s.as_dict() for s in self.scored],
            "saved": self.saved,
        }


def set_name(path: str | Path) -> str:
    return _SET.sub("-", Path(path).stem).strip("-.") or "golden"


def eval_dir(kb: KnowledgeBase, name: str) -> Path:
    return kb.state_dir / EVAL_DIR / name


def pick_sample(questions: list[GoldenQuestion], n: int | None, seed: int) -> list[GoldenQuestion]:
    """``n`` of ``questions`` drawn with ``seed`` (the same ``n`` and seed, the same
    questions), in file order; all of them when ``n`` is None or not smaller."""
    if n is None or n >= len(questions):
        return list(questions)
    if n < 1:
        raise UsageError("--sample must be at least 1", hint="e.g. --sample 20")
    chosen = set(random.Random(seed).sample(range(len(questions)), n))
    return [q for i, q in enumerate(questions) if i in chosen]


def _load_report(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(
            f"{path} is not an eval report kb-ai can read ({exc})",
            hint="name a .json report written by `kb-ai eval`",
        ) from exc
    if not isinstance(data, dict) or not isinstance(data.get("questions"), list):
        raise UsageError(f"{path} is not an eval report (no questions list)")
    return data


def _last_report(kb: KnowledgeBase, name: str) -> Path | None:
    folder = eval_dir(kb, name)
    reports = sorted(folder.glob("*.json")) if folder.is_dir() else []
    return reports[-1] if reports else None


async def evaluate(
    okb: OpenKb,
    path: str | Path,
    *,
    sample: int | None = None,
    seed: int = 0,
    margin: float = 0.0,
    against: str | Path | None = None,
    save: bool = True,
) -> EvalRun:
    """Ask each golden question of ``path`` (or ``sample`` of them), score the answers,
    compare with ``against`` (a report) or the set's last run, and keep the reports.

    The file is read and checked whole before any question is asked; a missing model
    raises at once (ConfigError). A question whose answer fails (a timeout, a garbled
    reply) is scored ``error`` and the run goes on.
    """
    if not 0 <= margin <= 1:
        raise UsageError("--margin is a share of the questions, from 0 to 1", hint="e.g. 0.05")
    questions = pick_sample(load_golden(path), sample, seed)
    name = set_name(path)
    earlier_path = Path(against).absolute() if against else _last_report(okb.kb, name)
    earlier = _load_report(earlier_path) if earlier_path else None
    okb.note("eval", f"{name}: {len(questions)} question(s)")
    started = datetime.now(UTC)
    llm = okb.open_llm()
    scored: list[Scored] = []
    try:
        for golden in questions:
            began = time.perf_counter()
            try:
                answer = await ask(okb, golden.question, llm=llm)
            except KbAiError as exc:
                scored.append(error_scored(golden, str(exc), seconds=time.perf_counter() - began))
                continue
            scored.append(score_answer(golden, answer, time.perf_counter() - began))
    finally:
        if (aclose := getattr(llm, "aclose", None)) is not None:
            await aclose()
    run = EvalRun(
        name,
        str(path),
        okb.settings.model or "",
        started.isoformat(timespec="seconds"),
        scored,
        sample,
        seed,
        margin,
    )
    if earlier is not None and earlier_path is not None:
        run.comparison = compare(scored, earlier, _shown(okb.kb, earlier_path))
    if save:
        _save(okb.kb, run, started)
    return run


def _shown(kb: KnowledgeBase, path: Path) -> str:
    try:
        return kb.relpath(path)
    except (ValueError, KbAiError):
        return str(path)


def _save(kb: KnowledgeBase, run: EvalRun, started: datetime) -> None:
    folder = eval_dir(kb, run.set)
    folder.mkdir(parents=True, exist_ok=True)
    # named by the start time, which sorts them: the last is the newest
    stem = started.strftime("%Y%m%dT%H%M%S.%fZ")
    while (folder / f"{stem}.json").exists():  # started in the same microsecond
        started = started.replace(microsecond=(started.microsecond + 1) % 1_000_000)
        stem = started.strftime("%Y%m%dT%H%M%S.%fZ")
    json_path, md_path = folder / f"{stem}.json", folder / f"{stem}.md"
    run.saved = [kb.relpath(json_path), kb.relpath(md_path)]
    atomic_write_text(md_path, markdown_report(run.as_dict()))
    atomic_write_text(json_path, json.dumps(run.as_dict(), ensure_ascii=False, indent=1) + "\n")


def last_runs(kb: KnowledgeBase) -> list[dict[str, Any]]:
    """The last run of each golden set kept in ``kb``, newest first (for Status): its
    scores and totals, without the questions. A report that cannot be read is skipped."""
    root = kb.state_dir / EVAL_DIR
    out = []
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        last = _last_report(kb, folder.name) if folder.is_dir() else None
        if last is None:
            continue
        try:
            data = _load_report(last)
        except UsageError:
            continue
        data.pop("questions", None)
        data["report"] = kb.relpath(last.with_suffix(".md"))
        out.append(data)
    return sorted(out, key=lambda d: str(d.get("started_at")), reverse=True)
