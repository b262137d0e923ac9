"""Versioned schema steps for state.db: each component (the queue, sessions, lint
verdicts, kb-ai's own article versions, ...) appends its steps and records how far it got.

Its own module, importing nothing of wiki/, so that any module (articles' hand-edit
bookkeeping as much as state.py) can migrate its tables without an import circle.
"""

from __future__ import annotations

import sqlite3


def apply_migrations(conn: sqlite3.Connection, component: str, steps: tuple[str, ...]) -> int:
    """Run the steps of ``component`` not yet applied, in order; returns its new version.

    The applied version of each component is kept in the ``schema_versions`` table.
    Append new steps to the end; never edit or reorder the old ones.
    """
    try:  # the common case, an up-to-date schema, takes no write lock
        row = conn.execute(
            "SELECT version FROM schema_versions WHERE component = ?", (component,)
        ).fetchone()
    except sqlite3.OperationalError:  # no schema_versions table yet
        row = None
    if row is not None and row[0] >= len(steps):
        return row[0]
    with conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_versions"
            " (component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
        )
    # BEGIN IMMEDIATE: two processes opening a new state.db must not both migrate it.
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute(
            "SELECT version FROM schema_versions WHERE component = ?", (component,)
        ).fetchone()
        version = row[0] if row else 0
        for step in steps[version:]:
            conn.execute(step)
        if len(steps) > version:
            conn.execute(
                "INSERT INTO schema_versions (component, version) VALUES (?, ?)"
                " ON CONFLICT(component) DO UPDATE SET version = excluded.version",
                (component, len(steps)),
            )
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    return max(version, len(steps))
