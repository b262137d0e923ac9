"""What a compile run leaves behind besides its articles: each source's outcome in
state.db, the indexes, the search index, a log.md entry and the commit message."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import closing

from compiler.result import CompileResult, Failure, Revision
from compiler.state import Plan, Work
from kb_ai.hooks.hintfile import HINT_DIR, start_writing
from wiki import (
    Article,
    CatalogEntry,
    KnowledgeBase,
    append_log,
    entry_for,
    open_state,
    refresh_catalog,
    set_meta,
    upsert_source,
    write_indexes,
)
from wiki.indexing import refresh_search_index, remove_from_tables
from wiki.state import RUN_RECORDED

#: state.db meta key: the fingerprint of the indexes the last run wrote (see current_catalog).
INDEX_FINGERPRINT = "index_fingerprint"


def record_sources(
    kb: KnowledgeBase,
    work: Sequence[Work],
    plan: Plan,
    article_errors: Mapping[str, str],
    *,
    model: str,
    prompt_version: str,
    interrupted: bool,
    copies: Sequence[Revision] = (),
) -> tuple[list[str], list[Failure]]:
    """Each source's outcome, in input order, into state.db; returns (the origins
    compiled, the failures). ``copies``: documents with the text of another source of
    the run, recorded as that source (its raw copy, articles and outcome)."""
    compiled: list[str] = []
    failed: list[Failure] = []
    outcome: dict[str, dict] = {}  # raw path -> what was recorded of its source
    with closing(open_state(kb)) as conn:
        # One transaction: the sources' state and the mark that the run's articles are
        # theirs land together, or neither does (see compiler.recovery).
        conn.execute("BEGIN IMMEDIATE")
        for i, w in enumerate(work):
            paths = plan.articles_of(i)
            # an article it fed before and was to leave counts too: failing to write it
            # leaves the old version's statements there, so the source is not done
            mine = [*paths, *(p for p in w.previous_articles if p not in paths)]
            error = w.error or next((article_errors[p] for p in mine if p in article_errors), None)
            if error is None and not paths:
                error = (
                    "interrupted before it finished" if interrupted else "no article was planned"
                )
            if error is None:
                compiled.append(w.source.origin)
            else:
                failed.append(Failure(w.source.origin, error))
            outcome[w.raw_path] = dict(
                raw_path=w.raw_path,
                checksum=w.source.checksum,
                model=model,
                prompt_version=prompt_version,
                status="ok" if error is None else "failed",
                error=error,
                # what it feeds now: an article it fed before and not now has lost it
                articles=sorted(set(paths)) if error is None else list(w.previous_articles),
            )
            upsert_source(conn, w.source.origin, **outcome[w.raw_path])
        for copy in copies:
            same = outcome.get(copy.raw_path)
            if same is None:  # the source it copies was never read (interrupted)
                continue
            upsert_source(conn, copy.origin, **same)
            if same["status"] == "ok":
                compiled.append(copy.origin)
            else:
                failed.append(Failure(copy.origin, same["error"] or ""))
        set_meta(conn, RUN_RECORDED, "1")
        conn.commit()
    return compiled, failed


def write_run_indexes(
    kb: KnowledgeBase,
    catalog: Sequence[CatalogEntry],
    since_ns: int,
    written: Mapping[str, Article],
) -> None:
    """The indexes from the catalog the run started with and the articles it wrote,
    reading only articles changed by someone else since ``since_ns``."""
    fresh = {path: entry_for(article) for path, article in written.items()}
    fingerprint = write_indexes(kb, refresh_catalog(kb, list(catalog), since_ns, fresh))
    with closing(open_state(kb)) as conn:
        set_meta(conn, INDEX_FINGERPRINT, fingerprint)


def update_search(
    kb: KnowledgeBase, written: Mapping[str, Article], deleted: Sequence[str] = ()
) -> None:
    """The search index (and catalog lines) with the articles the run wrote, and
    without those it deleted; then the prompt hook's hint file, where one is used (started)."""
    with closing(open_state(kb)) as conn:
        remove_from_tables(conn, deleted)
        refresh_search_index(kb, conn, sorted(written), dict(written))
    # The agents' prompt hint, where one is used: written again in a process of its own
    # (seconds for a large wiki; the run does not wait for it, and until it is there the
    # prompt hook answers from the search index through Python).
    if (kb.root / HINT_DIR).is_dir():
        start_writing(kb.root)


def log_run(kb: KnowledgeBase, result: CompileResult, *, interrupted: bool) -> None:
    """The run's entry in log.md."""
    lines = [
        f"sources: {len(result.compiled)} compiled, {len(result.skipped)} unchanged, "
        f"{len(result.failed)} failed"
    ]
    lines += [f"created {p}" for p in result.created]
    lines += [f"updated {p}" for p in result.updated]
    lines += [f"deleted {d.path}: {d.cause}" for d in result.deleted]
    lines += [f"held {p}: its update meets a hand edit (review)" for p in result.held]
    lines += [f"failed {f.source}: {f.error}" for f in result.failed]
    lines += [f"revised {r.raw_path} ({r.way}) from {r.origin}" for r in result.revisions]
    lines += [
        f"new source {m.raw_path} may revise {m.candidates[0][0]} "
        f"(similarity {m.candidates[0][1]:.2f}: {m.reason})"
        for m in result.maybe_revisions
    ]
    lines += [f"checked {c}" for c in result.checks]
    if result.redactions:
        lines.append(f"redacted {result.redactions} secret(s) or private span(s) before storing")
    if interrupted:
        lines.append("interrupted: the rest will be compiled by the next run")
    append_log(kb, "compile", lines)


def commit_message(result: CompileResult) -> str:
    """The run's git commit message: counts, then the articles created, updated and
    deleted (with the source that left each deleted one)."""
    head = (
        f"compile: {len(result.compiled)} source(s), {len(result.created)} created, "
        f"{len(result.updated)} updated"
    )
    if result.deleted:
        head += f", {len(result.deleted)} deleted"
    if result.failed:
        head += f", {len(result.failed)} failed"
    body = [
        *(f"created {p}" for p in result.created),
        *(f"updated {p}" for p in result.updated),
        *(f"deleted {d.path}: {d.cause}" for d in result.deleted),
        *(f"held {p}: its update meets a hand edit, which stays (review)" for p in result.held),
        *(f"learned lessons/{i}.md" for i in result.lessons_new),
        *(f"seen again lessons/{i}.md" for i in result.lessons_seen),
    ]
    return head + ("\n\n" + "\n".join(body) if body else "")
