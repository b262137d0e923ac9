"""``/healthz``: whether the server can do its work, checked, not assumed.

Four checks, each named in the reply: the state database opens, answers a read and
takes a write; the compile workers are alive (a pool whose thread ended is started
again, and says so) and none is waiting out a failure; the queue moves (work queued
longer than ``stall_seconds`` while nothing runs means no worker takes it); the disk
under the knowledge base has ``min_free_bytes`` free. 200 when all pass, else 503 in
the one error shape, naming what failed. A followed wiki remote is reported beside them
(``remote``: commits waiting, its last failure), never failing the server: commits wait
here until it answers.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from compiler.queue import TaskQueue
from kb_ai.errors import StorageError
from kb_ai.service.remote import remote_state
from web.errors import error_body
from web.people import ANONYMOUS, visitor
from web.services import Services, services
from wiki import set_meta


@dataclass(frozen=True)
class HealthLimits:
    """When /healthz says unhealthy."""

    min_free_bytes: int = 100_000_000  # the disk under the knowledge base
    stall_seconds: float = 300.0  # work queued this long, nothing running: stalled


async def healthz(request: Request) -> JSONResponse:
    svc = services(request)
    limits: HealthLimits = request.app.state.health_limits
    checks = await svc.run(_check, svc, limits)
    failed = [f"{name}: {c['error']}" for name, c in checks.items() if not c["ok"]]
    extra = {
        "checks": checks,
        "queue": checks["queue"].get("counts"),
        "workers": checks["workers"].get("alive", 0),
        # reported, never failing the server: commits wait here until it answers
        "remote": await svc.run(_remote, svc),
    }
    if visitor(request) is ANONYMOUS:  # a probe with no token: the verdict, no details
        failing = [name for name, c in checks.items() if not c["ok"]]
        if failing:
            body = error_body("unhealthy: " + ", ".join(failing), 503, failing=failing)
            return JSONResponse(body, status_code=503)
        return JSONResponse({"ok": True})
    if failed:
        body = error_body("unhealthy: " + "; ".join(failed), 503, **extra)
        return JSONResponse(body, status_code=503)
    return JSONResponse({"ok": True, **extra})


def _check(svc: Services, limits: HealthLimits) -> dict[str, dict[str, Any]]:
    database, counts, oldest = _database(svc)
    return {
        "database": database,
        "workers": _workers(svc),
        "queue": _queue(counts, oldest, limits),
        "disk": _disk(svc, limits),
    }


def _database(svc: Services) -> tuple[dict[str, Any], dict[str, int] | None, float | None]:
    """(the check, the queue's counts, the age in seconds of the oldest queued task)."""
    where = str(svc.kb.state_db)
    try:
        with svc.db() as conn:
            queue = TaskQueue(svc.kb, conn)
            counts = queue.counts()
            row = queue.db.execute(
                "SELECT min(created_at) FROM tasks WHERE state = 'queued'"
            ).fetchone()
            set_meta(conn, "healthz_at", datetime.now(UTC).isoformat(timespec="seconds"))
    except StorageError as exc:
        return {"ok": False, "path": where, "error": str(exc), "cause": exc.cause}, None, None
    oldest = None
    if row and row[0]:
        oldest = max(0.0, time.time() - datetime.fromisoformat(row[0]).timestamp())
    return {"ok": True, "path": where}, counts, oldest


def _workers(svc: Services) -> dict[str, Any]:
    pool = svc.pool
    if pool is None:  # a server started without workers (tests, read-only mirrors)
        return {"ok": True, "size": 0, "alive": 0}
    report = pool.health()
    # a worker waiting to try again after failures (one not started yet has none)
    waiting = [w for w in report["workers"] if w["failures"] and not w["running"]]  # type: ignore[union-attr]
    if not report["thread"]:
        return {"ok": False, "error": "the compile workers are not running", **report}
    if waiting:
        first = waiting[0]
        retry = first["retry_in"]
        when = f"; trying again in {retry:.0f} s" if retry is not None else ""
        error = f"{len(waiting)} of {report['size']} compile worker(s) stopped: {first['error']}"
        return {"ok": False, "error": error + when, **report}
    return {"ok": True, **report}


def _queue(
    counts: dict[str, int] | None, oldest: float | None, limits: HealthLimits
) -> dict[str, Any]:
    if counts is None:
        return {"ok": False, "error": "unknown (the database did not answer)", "counts": None}
    report = {"counts": counts, "oldest_queued_s": oldest}
    if oldest is not None and oldest > limits.stall_seconds and not counts["running"]:
        error = (
            f"{counts['queued']} task(s) queued, the oldest {oldest:.0f} s ago,"
            " and no compile is running"
        )
        return {"ok": False, "error": error, **report}
    return {"ok": True, **report}


def _remote(svc: Services) -> dict[str, Any] | None:
    """The wiki remote: its URL, the commits waiting to be pushed, its last failure;
    None when the knowledge base follows none."""
    state = remote_state(svc.okb)
    if state is None:
        return None
    follower = svc.follower
    return {**state.as_dict(), "following": follower is not None and follower.alive}


def _disk(svc: Services, limits: HealthLimits) -> dict[str, Any]:
    where = svc.kb.state_dir if svc.kb.state_dir.is_dir() else svc.kb.root
    free = shutil.disk_usage(where).free
    report = {"path": str(where), "free_bytes": free, "min_free_bytes": limits.min_free_bytes}
    if free < limits.min_free_bytes:
        error = (
            f"{free / 1e6:.0f} MB free under {where}, below {limits.min_free_bytes / 1e6:.0f} MB"
        )
        return {"ok": False, "error": error, **report}
    return {"ok": True, **report}
