"""Editing an article by hand through the application layer: the edit is one commit
with the actor as its author (wiki/editing.py checks it and refuses conflicts)."""

from __future__ import annotations

from kb_ai.service.opened import OpenKb
from kb_ai.service.remote import publish
from wiki.editing import save_edit


def save(okb: OpenKb, path: str, text: str, *, base: str, message: str) -> str | None:
    """Save ``text`` as the article at ``path``, over the version whose blob id is
    ``base``; returns the commit's short sha (None: nothing changed). Blocking."""
    okb.note("edit", path)
    sha = save_edit(okb.kb, path, text, base=base, message=message)
    if sha is not None:
        publish(okb)
    return sha
