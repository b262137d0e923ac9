"""What the API and the pages show of the knowledge base: the article tree, an article
with its sources and history, a raw source, the queue. Blocking (files, git): call
through ``Services.run``."""

from __future__ import annotations

import json
import re
from contextlib import closing
from dataclasses import asdict
from typing import Any

from compiler.queue import TaskQueue
from kb_ai.errors import NotFoundError, PathEscapeError
from kb_ai.llm.store import unlogged_calls
from web.originals import render_marked
from web.render import WikiLinks, article_url, diff_lines, render_markdown
from wiki import (
    Article,
    CatalogEntry,
    KnowledgeBase,
    body_start_line,
    build_catalog,
    entry_for,
    file_history,
    list_articles,
    load_catalog,
    open_state,
    read_article,
    read_articles,
    read_raw,
    recent_runs,
    show_diff,
)
from wiki.database import shared_database
from wiki.state import last_sign_of_life, run_condition, state_loss

PUBLIC_TASK_FIELDS = (
    "id", "title", "filename", "kind", "checksum", "size", "state", "stage", "error",
    "attempts", "result", "created_at", "updated_at",
)  # fmt: skip
_SHA = re.compile(r"^[0-9a-f]{4,40}$")


def public_task(task: dict[str, Any]) -> dict[str, Any]:
    """A task as clients see it (which server holds its lease is not their business)."""
    actor = task.get("actor")
    if isinstance(actor, str):
        actor = json.loads(actor)
    by = actor.get("name") if isinstance(actor, dict) else None
    return {**{k: task[k] for k in PUBLIC_TASK_FIELDS}, "submitted_by": by}


def queue_now(kb: KnowledgeBase) -> dict[str, Any]:
    """The queue as Status shows it now: the newest 200 tasks, counts, recent runs."""
    with closing(open_state(kb)) as conn:
        snap = queue_snapshot(TaskQueue(kb, conn))
        snap["state_lost"] = state_loss(conn)  # state.db was made again: Status says so
    if shared_database(kb) is not None:  # calls made while the shared database was away
        snap["unlogged"] = unlogged_calls(kb.state_db)
    return snap


def queue_snapshot(queue: TaskQueue, limit: int = 200) -> dict[str, Any]:
    return {
        "tasks": [public_task(t) for t in queue.list(limit)],
        "counts": queue.counts(),
        "runs": [public_run(r) for r in recent_runs(queue.conn, 10)],
    }


def public_run(row: Any) -> dict[str, Any]:
    """A compile run as Status shows it, whoever started it (CLI, web queue, agent hook),
    on whichever server (with a shared database). A run still marked running whose
    process is gone from this machine was stopped; one whose heartbeat stopped died
    (killed, or its machine gone: wiki/state.py)."""
    state = run_condition(row)
    names = row.keys()
    alive = last_sign_of_life(row) if state == "died" else None
    summary = json.loads(row["summary"]) if row["summary"] else {}
    return {
        "id": row["id"],
        "started_by": row["started_by"] or "",
        "state": state,
        "stage": row["stage"] if state == "running" else None,
        "done": row["done"] or 0,
        "total": row["total"] or 0,
        "started_at": row["started_at"] or "",
        "finished_at": row["finished_at"],
        "commit": row["commit_sha"],
        "compiled": len(summary.get("compiled") or []),
        "removed": len(summary.get("removed") or []),  # a removal (kb-ai rm, Delete)
        "failed": len(summary.get("failed") or []),
        "created": summary.get("created") or [],
        "updated": summary.get("updated") or [],
        # articles the run deleted (no source left): named, no longer linkable
        "deleted": [d["path"] for d in summary.get("deleted") or [] if isinstance(d, dict)],
        # articles whose update meets a hand edit: it waits on the Review page
        "held": summary.get("held") or [],
        "error": summary.get("error"),
        "host": (row["host"] if "host" in names else None) or "",
        # a run that died: when it last said it lived
        "last_seen": alive.isoformat(timespec="seconds") if alive is not None else None,
        "note": run_note(state, row, alive),
    }


def run_note(state: str, row: Any, alive: Any) -> str | None:
    """Why a run marked running is not: in words for Status."""
    names = row.keys()
    host = (row["host"] if "host" in names else None) or ""
    if state == "died":
        since = alive.isoformat(timespec="seconds") if alive is not None else "?"
        on = f" on {host}" if host else ""
        return (
            f"no sign of life since {since}{on}: its process was killed or its machine is"
            " gone; what it had not committed compiles again"
        )
    if state == "stopped":
        return "its process is gone from this machine; what it had not committed compiles again"
    return None


def article_path(raw: str) -> str:
    """``wiki/type/slug.md`` from what a client may send ("type/slug.md", "/wiki/...")."""
    path = (raw or "").strip().lstrip("/")
    if not path:
        raise PathEscapeError("No article path given", hint="e.g. path=wiki/concept/backups.md")
    return path if path.startswith("wiki/") else f"wiki/{path}"


def catalog(kb: KnowledgeBase) -> list[CatalogEntry]:
    """Every article on disk, described by the master index where it has them."""
    on_disk = list_articles(kb)
    known = {e.path: e for e in (load_catalog(kb) or build_catalog(kb))}
    out = []
    for path in on_disk:
        entry = known.get(path)
        if entry is None:  # added by hand since the last compile; unreadable: left out
            entry = next((entry_for(a) for a in read_articles(kb, [path])), None)
        if entry is not None:
            out.append(entry)
    return out


def wiki_tree(kb: KnowledgeBase) -> dict[str, Any]:
    by_type: dict[str, list[dict[str, Any]]] = {}
    entries = catalog(kb)
    for e in sorted(entries, key=lambda e: (e.type, e.title.casefold())):
        by_type.setdefault(e.type or "other", []).append(
            {"path": e.path, "title": e.title, "summary": e.summary, "tags": e.tags,
             "url": article_url(e.path)}
        )  # fmt: skip
    types = [{"type": t, "articles": arts} for t, arts in sorted(by_type.items())]
    return {"types": types, "count": len(entries)}


def article_view(kb: KnowledgeBase, raw_path: str) -> dict[str, Any]:
    path = article_path(raw_path)
    article = read_article(kb, path)
    links = WikiLinks(catalog(kb))
    sources = []
    for entry in article.sources:
        # a document's cited pages or slides (compiler/documents): raw/x.md#pages=3-5
        rel, _, cite = entry.partition("#")
        kind, _, numbers = cite.partition("=")
        first = re.match(r"\d+", numbers) if kind in ("pages", "slides") else None
        item = {"path": entry, "title": rel, "url": None}
        if rel.startswith("raw/"):
            try:
                item["title"] = read_raw(kb, rel).title + (f" ({kind} {numbers})" if first else "")
                item["url"] = "/sources/" + rel + (f"#{kind[:-1]}-{first[0]}" if first else "")
            except (OSError, PathEscapeError, ValueError):
                item["title"] = f"{rel} (gone)"
        sources.append(item)
    for edit in article.edits:  # a person's lines it was written with: "a1b2c3d by Ann"
        sha = edit.split(" ", 1)[0]
        sources.append({"path": sha, "title": f"Hand edit {edit}", "url": f"?sha={sha}#diff"})
    return {
        "article": asdict(article),
        "html": render_markdown(
            article.body, base=article.path, links=links, first_line=_body_line(kb, article)
        ),
        "sources": sources,
        "url": article_url(article.path),
    }


def _body_line(kb: KnowledgeBase, article: Article) -> int:
    """The line of the article's file its body begins on (citations name file lines)."""
    text = kb.resolve(article.path, under="wiki").read_text(encoding="utf-8", errors="replace")
    return body_start_line(text, article.body)


def history_view(kb: KnowledgeBase, raw_path: str) -> list[dict[str, str | bool]]:
    path = article_path(raw_path)
    if not kb.resolve(path, under="wiki").is_file():
        raise NotFoundError(f"no article {path}")
    return file_history(kb, path)


def diff_view(kb: KnowledgeBase, raw_path: str, sha: str) -> dict[str, Any]:
    path = article_path(raw_path)
    kb.resolve(path, under="wiki")
    if not _SHA.match(sha or ""):
        raise NotFoundError(f"{sha!r} is not a commit of {path}", hint="pick one from its history")
    diff = show_diff(kb, sha, path)
    return {"sha": sha, "path": path, "diff": diff, "lines": diff_lines(diff)}


def source_view(kb: KnowledgeBase, rel: str) -> dict[str, Any]:
    rel = (rel or "").strip().lstrip("/")
    path = kb.resolve(rel, under="raw")
    if not path.is_file() or not rel.endswith(".md"):
        raise NotFoundError(f"no source {rel}")
    src = read_raw(kb, rel)
    links = WikiLinks(catalog(kb))
    original = src.original_path if (kb.root / src.original_path).is_file() else ""
    first = body_start_line(path.read_text(encoding="utf-8", errors="replace"), src.text)
    return {
        "source": {"path": src.path, "title": src.title, "origin": src.origin,
                   "kind": src.kind, "ingested_at": src.ingested_at, "text": src.text,
                   "original": original},
        # each block says its lines of the file: an answer citing raw/x.md#L40-L44 marks them
        "html": render_marked(src.text, lambda t, at: render_markdown(
            t, base=src.path, links=links, first_line=first + at)),
    }  # fmt: skip
