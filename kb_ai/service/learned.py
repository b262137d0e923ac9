"""The lessons agent sessions taught, through the application layer: listed with where
each stands, approved or rejected by a person (one commit, the person its author)."""

from __future__ import annotations

from collections.abc import Sequence

from compiler.lessons import decide, standings
from kb_ai.lessons import Lesson, Standing
from kb_ai.service.opened import OpenKb


def lessons(okb: OpenKb) -> list[Standing]:
    """Every lesson, the snapshot's first (approved, then active), then the rest."""
    return standings(okb.kb, okb.settings)


def approve(okb: OpenKb, ids: Sequence[str]) -> tuple[list[Lesson], str | None]:
    """Approve lessons: they rank first in the snapshot. Unknown ids are an error."""
    okb.note("approve lessons", ", ".join(ids))
    return decide(okb.kb, ids, "approved", okb.actor.name)


def reject(okb: OpenKb, ids: Sequence[str]) -> tuple[list[Lesson], str | None]:
    """Reject lessons: they stay out of the snapshot, whatever later sessions show."""
    okb.note("reject lessons", ", ".join(ids))
    return decide(okb.kb, ids, "rejected", okb.actor.name)
