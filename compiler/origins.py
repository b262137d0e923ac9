"""Origins: the name a source is known by (state.db, raw/'s ``origin:``, reports), made
from its path with secrets redacted, and the file an origin names found again.

A file called ``creds-ghp_....md`` is known as ``creds-[REDACTED].md``: the token never
reaches state.db, git or a report. Such an origin is no path any more, so finding its
file again (is it still there, has it changed) redacts the names on disk the same way,
one part of the path at a time.
"""

from __future__ import annotations

from pathlib import Path

from compiler.redact import REDACTED, redact_name


def origin_of(path: Path, member: str = "") -> str:
    """The origin of the file at ``path`` (a member of the archive there: ``#member``)."""
    origin = str(path.resolve()) + (f"#{member}" if member else "")
    return redact_name(origin)


def file_of(origin: str) -> Path | None:
    """The file (or folder) ``origin`` names, if it is there: the path itself, or, when a
    part of it was redacted, the entry of its folder whose name redacts to that part."""
    if REDACTED not in origin:
        path = Path(origin)
        return path if path.exists() else None
    path = Path(origin)
    if not path.is_absolute():
        return None
    found = Path(path.anchor)
    for part in path.parts[1:]:
        if REDACTED not in part:
            found = found / part
            continue
        try:
            entries = sorted(found.iterdir())
        except OSError:
            return None
        match = next((e for e in entries if redact_name(e.name) == part), None)
        if match is None:
            return None
        found = match
    return found if found.exists() else None
