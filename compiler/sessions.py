"""Agent sessions as sources: one identity per session, compiled a part at a time.

A transcript that carries its agent's session id (Claude Code, Codex) is known by that
id whichever way it arrives (an agent hook, `kb-ai compile` of its file or folder, the
web upload): ``session:<agent>:<id>``. A session grows (Codex writes every turn to its
rollout; a resumed Claude Code session continues), so it compiles in parts: each part is
a source of its own, ``session:<agent>:<id>#<first>-<end>``, holding only the turns
after the last part compiled. The sources table says which parts compiled (status ok),
and their checksum is the whole transcript's at that time, so an unchanged transcript
is recognised without parsing it.

A session with nothing new (or no conversation at all: only local commands) is skipped,
not failed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from compiler.transcripts import Transcript

# formats whose files carry the agent's own session id
SESSION_FORMATS = ("claude-code", "codex")
_PART = re.compile(r"#(\d+)-(\d+)$")


@dataclass(frozen=True)
class Increment:
    """What a session has to compile now: ``part`` under ``origin`` (None when nothing:
    see ``reason``)."""

    key: str
    origin: str = ""
    part: Transcript | None = None
    reason: str = ""


def session_key(agent: str, session_id: str) -> str:
    return f"session:{agent}:{session_id}"


def key_of_origin(origin: str) -> str | None:
    """The session key of a source origin (a part's or a hook task's), or None."""
    if not origin.startswith("session:"):
        return None
    return _PART.sub("", origin)


def _parts(known: Mapping[str, Any], key: str) -> list[tuple[int, int, Any]]:
    out = []
    prefix = key + "#"
    for origin, row in known.items():
        if origin.startswith(prefix) and (m := _PART.search(origin)) and row["status"] == "ok":
            out.append((int(m.group(1)), int(m.group(2)), row))
    return out


def compiled_turns(known: Mapping[str, Any], key: str) -> int:
    """How many turns of the session its compiled parts cover."""
    return max((end for _, end, _ in _parts(known, key)), default=0)


def session_checksums(known: Mapping[str, Any]) -> dict[str, str]:
    """checksum -> session key of every session part compiled (status ok): a transcript
    with one of these checksums is unchanged since, known without reading it."""
    out = {}
    for origin, row in known.items():
        if origin.startswith("session:") and _PART.search(origin) and row["status"] == "ok":
            out[row["checksum"]] = _PART.sub("", origin)
    return out


def increment(
    tr: Transcript, known: Mapping[str, Any], *, fallback_id: str | None = None
) -> Increment | None:
    """The next part of the agent session ``tr`` (parsed once by the intake), or None
    when it carries no session id: then it compiles as any other transcript."""
    session_id = tr.session_id or fallback_id
    if not session_id:
        return None
    key = session_key(tr.agent, session_id)
    if tr.is_empty():
        return Increment(key, reason="holds no conversation (only local commands or metadata)")
    start = compiled_turns(known, key)
    end = len(tr.turns)
    if tr.turns[-1].role == "user":
        end -= 1  # a request still waiting for its answer comes with the answer, next time
    if end <= start:
        return Increment(key, reason="nothing new since its last compile")
    part = Transcript(
        agent=tr.agent,
        title=tr.title + (" (continued)" if start else ""),
        started_at=tr.started_at,
        session_id=session_id,
        turns=tr.turns[start:end],
    )
    return Increment(key, f"{key}#{start}-{end}", part)
