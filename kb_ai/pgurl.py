"""A PostgreSQL URL's shape, judged before anything connects: by the settings when they
load (kb_ai/settings/fields.py) and by wiki/database.py, which reads ``database_url``
itself. Pure functions over the text of the URL."""

from __future__ import annotations

from urllib.parse import parse_qs, unquote, urlsplit


def url_problem(url: str) -> tuple[str, str] | None:
    """What is wrong with ``url`` as a ``database_url`` and what to write instead
    (``(problem, hint)``, the problem said of the setting), or None."""
    if not url.startswith(("postgresql://", "postgres://")):
        return (
            "must be a PostgreSQL URL (postgresql://user@host:5432/db)",
            "or leave it unset to keep the state in .kb-ai/state.db",
        )
    if not port_is_valid(url):
        return (
            "has a port that is not a number from 1 to 65535",
            "write postgresql://user@host:5432/db (5432 is PostgreSQL's own port)",
        )
    if not names_database(url):
        return (
            "names no database (postgresql://user@host:5432/db)",
            "add the database's name after the host: without one PostgreSQL takes the"
            " database named after the user, which may hold something else",
        )
    return None


def names_database(url: str) -> bool:
    """Whether a PostgreSQL URL names its database (in its path, or ``?dbname=``)."""
    try:
        parts = urlsplit(url)
    except ValueError:  # a malformed URL: the connection says what is wrong with it
        return True
    return bool(unquote(parts.path).strip("/")) or "dbname" in parse_qs(parts.query)


def port_is_valid(url: str) -> bool:
    """Whether a PostgreSQL URL's port, if it names one, is a number from 1 to 65535 (a
    URL of several hosts, ``h1:5432,h2:5432``, is left to the connection to judge)."""
    try:
        parts = urlsplit(url)
        if "," in parts.netloc:
            return True
        return parts.port is None or parts.port > 0
    except ValueError:  # not a number, or out of range
        return False
