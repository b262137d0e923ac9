"""What became of the captured sessions of a knowledge base: `kb-ai hooks status`."""

from __future__ import annotations

import json
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from kb_ai.hooks import spool


@dataclass
class CaptureStatus:
    spooled: int = 0  # records the worker has not taken yet
    bad: int = 0  # spool files that are not records (kept in spool/bad/)
    queued: int = 0
    running: int = 0
    done: int = 0
    skipped: int = 0
    failed: list[tuple[str, str, str]] = field(default_factory=list)  # (what, id, reason)

    def lines(self) -> list[str]:
        out = [
            f"Captured sessions: {self.spooled} waiting in the spool, {self.queued} queued, "
            f"{self.running} compiling, {self.done} compiled, {self.skipped} skipped "
            f"(nothing new), {len(self.failed)} failed"
        ]
        if self.bad:
            out.append(f"  {self.bad} unreadable spool file(s) kept in .kb-ai/spool/bad/")
        for what, ident, reason in self.failed[:20]:
            out.append(f"  failed {what} {ident}: {reason}")
        if len(self.failed) > 20:
            out.append(f"  ... and {len(self.failed) - 20} more")
        if self.failed:
            out.append("Retry them now with: kb-ai hooks retry (they are retried with backoff too)")
        return out


def capture_status(root: Path) -> CaptureStatus:
    from compiler.captures import open_captures
    from compiler.queue import TaskQueue
    from wiki import KnowledgeBase, open_state

    kb = KnowledgeBase.open(root)
    status = CaptureStatus(
        spooled=len(spool.pending(kb.state_dir)), bad=len(spool.bad_records(kb.state_dir))
    )
    with closing(open_state(kb)) as conn:
        queue = TaskQueue(kb, conn)
        open_captures(conn)
        rows = queue.db.execute(
            "SELECT id, title, state, error, result FROM tasks WHERE origin LIKE 'session:%'"
            " ORDER BY updated_at"
        ).fetchall()
        for task_id, title, state, error, result in rows:
            if state == "failed":
                status.failed.append(("task", f"{task_id} ({title})", error or "unknown error"))
            elif state == "done" and result and "skipped" in json.loads(result):
                status.skipped += 1
            elif state in ("queued", "running", "done"):
                setattr(status, state, getattr(status, state) + 1)
        for cap_id, session, path, error in conn.execute(
            "SELECT id, session_id, transcript_path, error FROM captures WHERE state = 'failed'"
        ):
            status.failed.append(("capture", f"{session[:8] or cap_id} ({path})", error or ""))
    return status
