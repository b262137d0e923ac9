"""`kb-ai lint --fix`: the mechanical repairs, then one commit that says what they were.

Dead links become their plain label (the text a reader sees is kept), the indexes are
written again from the articles, the search and catalog tables rebuilt. Nothing that
needs judgement (a missing source, an unsupported claim, a broken frontmatter) is
touched: those stay in the report. Links to a duplicate that --fix merges into another
article are made to lead to that one (:func:`repoint_links`) before the duplicate goes,
so they never become dead.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Mapping
from contextlib import closing

from kb_ai.errors import KbAiError, UsageError
from wiki._frontmatter import load_document
from wiki.articles import Article, list_articles, read_article
from wiki.catalog import entry_for, write_indexes
from wiki.files import atomic_write_text
from wiki.git import commit_paths
from wiki.hand_edits import find_hand_edit, keep_base
from wiki.indexing import rebuild_tables
from wiki.layout import KnowledgeBase
from wiki.linkcheck import Link, LinkResolver, repoint, unlink
from wiki.lint import Finding, LintReport, lint_wiki
from wiki.lock import compile_lock
from wiki.log import append_log
from wiki.raw import list_raw
from wiki.state import open_state, set_meta

__all__ = ["INDEX_FINGERPRINT", "fix_wiki", "lint_and_fix", "repoint_links"]

#: The state.db meta key of the indexes' fingerprint (compiler/record.py keeps the same).
INDEX_FINGERPRINT = "index_fingerprint"
_INDEX_CHECKS = {"index", "unindexed", "index-orphan", "index-stale"}


def lint_and_fix(kb: KnowledgeBase, *, fix: bool = False) -> LintReport:
    """Lint ``kb``; with ``fix``, repair what is mechanical, commit, and lint again."""
    with closing(open_state(kb)) as conn:
        report = lint_wiki(kb, conn)
        if not fix or not any(f.fixable for f in report.findings):
            return report
        lock = compile_lock(kb)
        if not lock.acquire(blocking=False):
            raise UsageError(
                "a compile of this knowledge base is running; lint --fix waits for none",
                hint="run `kb-ai lint --fix` again when it has finished",
            )
        try:
            commit = fix_wiki(kb, conn, report.findings)
            after = lint_wiki(kb, conn)
        finally:
            lock.release()
    fixed_keys = {(f.check, f.path, f.message) for f in after.findings}
    after.fixed = [
        f for f in report.findings if f.fixable and (f.check, f.path, f.message) not in fixed_keys
    ]
    after.commit = commit
    return after


def fix_wiki(kb: KnowledgeBase, conn: sqlite3.Connection, findings: list[Finding]) -> str | None:
    """Repair the fixable ``findings``; returns the commit made, or None."""
    checks = {f.check for f in findings if f.fixable}
    changed: list[str] = []
    if checks & {"dead-link", "dead-wikilink"}:
        changed += _unlink_dead(
            kb, sorted({f.path for f in findings if f.check.startswith("dead-")})
        )
    if changed or checks & _INDEX_CHECKS:
        entries = [entry_for(a) for a in _articles(kb)]
        set_meta(conn, INDEX_FINGERPRINT, write_indexes(kb, entries))
        changed += [kb.relpath(kb.master_index_path), kb.relpath(kb.topics_path)]
    if changed or "tables" in checks:
        rebuild_tables(conn, _articles(kb))
    if not changed:
        return None
    counts = Counter(f.check for f in findings if f.fixable and f.check != "tables")
    lines = [f"{n} {check}" for check, n in sorted(counts.items())]
    append_log(kb, "lint --fix", lines)
    message = (
        "lint --fix: "
        + ", ".join(lines)
        + "\n\n"
        + "\n".join(f"{f.path}: {f.message}" for f in findings if f.fixable and f.check != "tables")
    )
    return commit_paths(kb, message, [*changed, kb.relpath(kb.log_path)])


def _articles(kb: KnowledgeBase) -> list[Article]:
    """Every article whose file parses (the others stay in the report)."""
    articles = []
    for rel in list_articles(kb):
        try:
            articles.append(read_article(kb, rel))
        except (KbAiError, UnicodeDecodeError):
            continue
    return articles


def _titles(kb: KnowledgeBase, paths: list[str]) -> list[tuple[str, str]]:
    """(path, title) of each article (an unreadable one has none)."""
    titles = []
    for rel in sorted(paths):
        try:
            titles.append((rel, read_article(kb, rel).title))
        except (KbAiError, UnicodeDecodeError):
            titles.append((rel, ""))
    return titles


def repoint_links(kb: KnowledgeBase, moved: Mapping[str, str]) -> list[str]:
    """Make every link to an article of ``moved`` (its path -> the article it goes into)
    lead to the article it goes into, in every article that stays; a link in that very
    article becomes its label. Called while the articles of ``moved`` are still there
    (their links are resolved by them). The files changed; uncommitted.

    A hand-edited article is changed alike in kb-ai's own last version of it (kept
    under bases/), so that the change stays kb-ai's and the person's lines theirs."""
    on_disk = list_articles(kb)
    titles = _titles(kb, on_disk)
    before = LinkResolver(titles)
    after = LinkResolver([t for t in titles if t[0] not in moved])

    def goes_to(link: Link) -> str | None:
        path = before.find(link.target) if link.kind == "wikilink" else link.target
        return moved.get(path) if path else None

    def repointed(text: str, rel: str) -> tuple[str, int]:
        try:
            _, body = load_document(text, rel)
        except KbAiError:  # a broken frontmatter: lint reports it, nothing is changed
            return text, 0
        fixed, count = repoint(body, goes_to, rel, after)
        return text[: len(text) - len(body)] + fixed, count

    changed = []
    for rel in on_disk:
        if rel in moved:
            continue
        path = kb.resolve(rel)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):  # unreadable: lint reports it
            continue
        new, count = repointed(text, rel)
        if not count:
            continue
        hand = find_hand_edit(kb, rel)  # before the file changes
        atomic_write_text(path, new)
        if hand is not None:
            keep_base(kb, rel, repointed(hand.base, rel)[0] if hand.base else "")
        changed.append(rel)
    return changed


def _unlink_dead(kb: KnowledgeBase, paths: list[str]) -> list[str]:
    """Replace every dead link in the articles at ``paths`` by its label; the files changed."""
    on_disk = set(list_articles(kb))
    raw = set(list_raw(kb))
    resolver = LinkResolver(_titles(kb, list(on_disk)))

    def dead(link: Link) -> bool:
        if link.kind == "wikilink":
            return resolver.find(link.target) is None
        return link.target not in on_disk and link.target not in raw

    changed = []
    for rel in paths:
        path = kb.resolve(rel)
        text = path.read_text(encoding="utf-8")
        _, body = load_document(text, rel)
        fixed, count = unlink(body, dead, rel)
        if count:
            atomic_write_text(path, text[: len(text) - len(body)] + fixed)
            changed.append(rel)
    return changed
