"""`kb-ai lint`'s thin-article check: an article that lost the facts its source states.

A small model can compile a 120-turn meeting into an extraction with no decisions and
no facts ("a meeting where the team discusses the design"): the article says nothing a
question can be answered from, although raw/ holds the whole meeting. Ask reads the
source's passage then (retrieval/sources.py); lint names the article and the run that
compiled it, so someone recompiles it with a model that keeps the facts.

Only articles far shorter than their sources (under THIN_BYTES of their size, the
sources over MIN_SOURCE_BYTES) are read, so a lint of a large wiki pays for this only
where it may be needed (which source fed which article comes from state.db's sources
table, the sizes from the files); of those, one whose source states at least MIN_SOURCE_CLAIMS
numbers, dates and names, of which the article states under THIN_SHARE, is listed.
(The extraction may hold those facts, kept by the compiler's own checks, while the
article written from it does not: the article is what ask reads.)
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from typing import Any

from kb_ai.errors import KbAiError
from kb_ai.grounding import Evidence, extract_claims
from wiki import KnowledgeBase, open_state, read_article, read_raw
from wiki.extraction import read_extraction_data
from wiki.lint import WARNING, Finding
from wiki.state import runs_connection

__all__ = ["thin_findings"]

THIN_BYTES = 0.25
MIN_SOURCE_BYTES = 1_500  # a shorter source is read whole by whoever opens its article
MIN_SOURCE_CLAIMS = 8
THIN_SHARE = 0.25
RECORDS = ("facts", "decisions", "enumerations")


def _records(kb: KnowledgeBase, source: str) -> int | str:
    """How many facts, decisions and enumerations the extraction of ``source`` holds."""
    slug = source.removeprefix("raw/").removesuffix(".md")
    try:
        data = read_extraction_data(kb, slug)
    except (OSError, ValueError, KbAiError):
        return "no"
    return sum(len(data.get(k) or []) for k in RECORDS if isinstance(data.get(k), list))


def _size(kb: KnowledgeBase, rel: str) -> int:
    try:
        return (kb.root / rel).stat().st_size
    except OSError:
        return 0


def _compiled_by(conn: sqlite3.Connection, path: str) -> dict[str, Any] | None:
    """The newest run that created or updated ``path`` (id, start, commit)."""
    runs = runs_connection(conn)  # (with a shared database, every server's runs)
    rows = runs.execute(
        "SELECT id, started_at, summary, commit_sha FROM runs WHERE summary LIKE ? "
        "ORDER BY id DESC LIMIT 20",
        (f"%{path}%",),
    ).fetchall()
    for row in rows:
        try:
            summary = json.loads(row["summary"] or "{}")
        except ValueError:
            continue
        if path in (summary.get("created") or []) + (summary.get("updated") or []):
            return {"id": row["id"], "at": row["started_at"] or "", "commit": row["commit_sha"]}
    return None


def _candidates(kb: KnowledgeBase, conn: sqlite3.Connection) -> dict[str, list[str]]:
    """Article path -> its sources big enough, and big enough beside it, to look at
    (from state.db's record of what each source fed: no article is read for this)."""
    found: dict[str, list[str]] = {}
    for row in conn.execute("SELECT raw_path, articles FROM sources WHERE raw_path LIKE 'raw/%'"):
        size = _size(kb, row["raw_path"])
        if size < MIN_SOURCE_BYTES:
            continue
        try:
            articles = json.loads(row["articles"] or "[]")
        except ValueError:
            continue
        for path in articles if isinstance(articles, list) else []:
            if isinstance(path, str) and 0 < _size(kb, path) <= size * THIN_BYTES:
                found.setdefault(path, []).append(row["raw_path"])
    return found


def thin_findings(kb: KnowledgeBase) -> list[Finding]:
    """One warning per article that states under THIN_SHARE of its source's claims."""
    findings = []
    with closing(open_state(kb)) as conn:
        for rel, sources in sorted(_candidates(kb, conn).items()):
            try:
                article = read_article(kb, rel)
            except (OSError, ValueError, KbAiError):
                continue  # lint's other checks report a file that cannot be read
            said = Evidence(article.title, article.body)
            for source in dict.fromkeys(sources):
                try:
                    text = read_raw(kb, source).text
                except (OSError, ValueError, KbAiError):
                    continue
                claims = extract_claims(text)
                if len(claims) < MIN_SOURCE_CLAIMS:
                    continue
                stated = sum(said.supports(c) for c in claims)
                if stated >= THIN_SHARE * len(claims):
                    continue
                run = _compiled_by(conn, rel)
                by = (
                    f"compiled by run {run['id']} ({run['at'][:16]}"
                    + (f", commit {run['commit'][:8]}" if run["commit"] else "")
                    + ")"
                    if run
                    else "compiled before runs were recorded"
                )
                findings.append(
                    Finding(
                        "thin-article",
                        WARNING,
                        rel,
                        f"states {stated} of the {len(claims)} numbers, dates and names its "
                        f"source {source} states ({by}; its extraction keeps "
                        f"{_records(kb, source)} facts, decisions and lists). Ask reads the "
                        "source's passage meanwhile; recompile the source with a larger "
                        "model: kb-ai compile --force --model MODEL <the source's file>",
                    )
                )
    return findings
