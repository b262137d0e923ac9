"""`kb-ai status`: what the knowledge base holds and what is out of date."""

from __future__ import annotations

import hashlib
import json
from contextlib import closing
from pathlib import Path
from typing import Any

from compiler.mode import choose_mode
from compiler.origins import file_of
from kb_ai.llm import usage_totals
from kb_ai.llm.store import SHARED_MIGRATIONS as LLM_MIGRATIONS
from kb_ai.settings import Settings
from wiki import KnowledgeBase, all_sources, last_run, list_articles, open_state, recent_runs
from wiki.database import shared_connect
from wiki.state import last_sign_of_life, run_condition, state_loss


def kb_status(kb: KnowledgeBase, settings: Settings) -> dict[str, Any]:
    """A report of sources, articles, staleness, the last run and model use so far.

    Stale means one of: the source file changed on disk since it was compiled, it is
    gone, or it was extracted by another model or prompt version (lag: reported, never
    recompiled behind the user's back).
    """
    version = choose_mode(settings).version  # the mode a run would choose now
    with closing(open_state(kb)) as conn:
        rows = all_sources(conn)
        run = last_run(conn)
        lost = state_loss(conn)
        unfinished = [_unfinished(r) for r in recent_runs(conn, 10) if r["state"] == "running"]
    failed, changed, missing, lag = [], [], [], []
    for origin, row in sorted(rows.items()):
        if row["status"] != "ok":
            failed.append({"source": origin, "error": row["error"] or "unknown error"})
        path = file_of(origin) or Path(origin)  # a redacted name: its file found again
        archive = Path(origin.split("#", 1)[0])
        if "#" in origin and archive.suffix.lower() == ".zip":  # a member: its archive
            if file_of(str(archive)) is None:  # (its change shows when the zip is compiled)
                missing.append(origin)
        elif path.is_absolute():
            if not path.is_file():
                missing.append(origin)
            elif _sha256(path) != row["checksum"]:
                changed.append(origin)
        if row["status"] == "ok" and (
            row["prompt_version"] != version
            or (settings.model and row["model"] and row["model"] != settings.model)
        ):
            lag.append(origin)
    last = None
    if run is not None:
        summary = json.loads(run["summary"]) if run["summary"] else {}
        last = {
            "started_at": run["started_at"],
            "finished_at": run["finished_at"],
            "commit": run["commit_sha"],
            "compiled": summary.get("compiled", []),
            "failed": summary.get("failed", []),
            "skipped": summary.get("skipped", []),
        }
    return {
        "kb": str(kb.root),
        "model": settings.model,
        "prompt_version": version,
        "articles": len(list_articles(kb)),
        "sources": {
            "total": len(rows),
            "ok": sum(1 for r in rows.values() if r["status"] == "ok"),
            "failed": len(failed),
        },
        "failed": failed,
        "stale": {"changed": changed, "missing": missing, "lag": lag},
        "last_run": last,
        # runs marked running among the newest ten: running, stopped or died (wiki/state.py)
        "unfinished_runs": unfinished,
        "usage": _usage(kb),
        # state.db was found missing and made again: when, what was rebuilt, what is lost
        "state_lost": lost,
    }


def _unfinished(row: Any) -> dict[str, Any]:
    """A run not finished, as `kb-ai status` tells it: running (its stage), stopped (its
    process gone from this machine) or died (its heartbeat stopped, on any machine)."""
    names = row.keys()
    seen = last_sign_of_life(row)
    return {
        "id": row["id"],
        "state": run_condition(row),
        "started_by": row["started_by"] or "",
        "started_at": row["started_at"],
        "host": (row["host"] if "host" in names else None) or "",
        "stage": row["stage"],
        "done": row["done"] or 0,
        "total": row["total"] or 0,
        "last_seen": seen.isoformat(timespec="seconds") if seen is not None else None,
    }


def _usage(kb: KnowledgeBase) -> dict[str, Any]:
    """The model calls logged so far: with a shared database, every server's (and the
    calls this server made while it was away, which the totals miss)."""
    return usage_totals(kb.state_db, connect=shared_connect(kb, "llm", LLM_MIGRATIONS))


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None
