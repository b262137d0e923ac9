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

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from compiler.redact import redact
from compiler.transcripts import HEAD_BYTES, Transcript, TranscriptError, detect, parse
from compiler.transcripts.chunks import pack_turns

# formats whose files carry the agent's own session id
SESSION_FORMATS = ("claude-code", "codex")
_PART = re.compile(r"#(\d+)-(\d+)$")


@dataclass(frozen=True)
class Increment:
    """What a session has to compile now: ``source`` (None when nothing: see ``reason``)."""

    key: str
    source: Any = None  # compiler.sources.Source, or None
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


def is_compiled(known: Mapping[str, Any], key: str, checksum: str) -> bool:
    """Whether a part was compiled from exactly this transcript."""
    return any(row["checksum"] == checksum for _, _, row in _parts(known, key))


def head_key(data: bytes, name: str) -> str | None:
    """The session key of a transcript, from its first bytes only (None: not a session)."""
    head = data[:HEAD_BYTES]
    if detect(head, name) not in SESSION_FORMATS:
        return None
    try:
        tr = parse(head, name)
    except (TranscriptError, ValueError):
        return None
    return session_key(tr.agent, tr.session_id) if tr.session_id else None


def increment(
    data: bytes,
    name: str,
    known: Mapping[str, Any],
    *,
    chunk_chars: int,
    fallback_id: str | None = None,
) -> Increment | None:
    """The next part of the session in ``data`` (None when ``data`` is not an agent
    session with an id; then it compiles as any other source)."""
    from compiler.sources import Source, decode_text

    if detect(data[:HEAD_BYTES], name) not in SESSION_FORMATS:
        return None  # a note, a document, another transcript format: looked at no further
    checksum = hashlib.sha256(data).hexdigest()
    key = head_key(data, name)
    if key is not None and is_compiled(known, key, checksum):
        return Increment(key, None, "unchanged since it was compiled")
    text = decode_text(data, name)
    if detect(text, name) not in SESSION_FORMATS:
        return None
    try:
        tr = parse(text, name)
    except (TranscriptError, ValueError):
        return None
    session_id = tr.session_id or fallback_id
    if not session_id:
        return None
    key = session_key(tr.agent, session_id)
    if tr.is_empty():
        return Increment(key, None, "holds no conversation (only local commands or metadata)")
    start = compiled_turns(known, key)
    end = len(tr.turns)
    if tr.turns[-1].role == "user":
        end -= 1  # a request still waiting for its answer comes with the answer, next time
    if end <= start:
        return Increment(key, None, "nothing new since its last compile")
    part = Transcript(
        agent=tr.agent,
        title=tr.title + (" (continued)" if start else ""),
        started_at=tr.started_at,
        session_id=session_id,
        turns=tr.turns[start:end],
    )
    clean, redacted = redact(part.to_text())
    source = Source(
        origin=f"{key}#{start}-{end}",
        title=redact(part.title)[0],
        kind="transcript",
        text=clean,
        checksum=checksum,
        size=len(data),
        chunks=pack_turns(clean, chunk_chars),
        redactions=tr.redactions + redacted,
    )
    return Increment(key, source)
