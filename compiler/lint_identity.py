"""What lint finds of one document that became several: articles with the same title,
articles on one subject that state different values for one fact with no date saying
which is current, and sources that look like revisions of each other (compiler/identity).

``kb-ai lint --fix`` merges the duplicates that came from revisions of one source: the
article of the newest revision stays, the older articles and raw copies go, the state of
every origin compiled into them points to the one left, all in one commit. An older
article that holds a person's lines stays (named, for a person to merge): --fix never
deletes what a person wrote.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass
from itertools import combinations

from compiler.hand_edits import person_lines
from compiler.identity import title_key
from compiler.identity_index import pairs_alike
from compiler.record import INDEX_FINGERPRINT
from compiler.removal import discard
from kb_ai.errors import KbAiError, UsageError
from wiki import (
    Article,
    KnowledgeBase,
    all_sources,
    append_log,
    commit_all,
    current_catalog,
    get_meta,
    git,
    open_state,
    read_article,
    read_raw,
    source_articles,
)
from wiki.hand_edits import find_hand_edit
from wiki.indexing import refresh_search_index
from wiki.lint import WARNING, Finding, LintReport
from wiki.lock import compile_lock
from wiki.repair import lint_and_fix, repoint_links

_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_DATED = re.compile(r"\b(?:as of|since|until|previously|formerly|no longer)\b", re.I)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass(frozen=True)
class Merge:
    """Articles of one document: ``kept`` stays, ``gone`` (older revisions) go."""

    kept: str
    gone: tuple[str, ...]
    raw_gone: tuple[str, ...]
    raw_kept: str


def lint_all(kb: KnowledgeBase, *, fix: bool = False) -> LintReport:
    """`kb-ai lint` (and the Health page): wiki/'s checks and these; with ``fix``, the
    duplicates of one source merged first (their own commit), then the mechanical fixes."""
    merges, merged = merge_revisions(kb) if fix else ([], None)
    report = lint_and_fix(kb, fix=fix)
    report.findings += identity_findings(kb)
    report.fixed += [
        Finding("duplicate-title", WARNING, path, f"merged into {m.kept}: revisions of one source")
        for m in merges
        for path in m.gone
    ]
    report.commit = report.commit or merged
    return report


def identity_findings(kb: KnowledgeBase) -> list[Finding]:
    """Duplicate titles, undated disagreements between them, and sources alike."""
    with closing(open_state(kb)) as conn:
        known = all_sources(conn)
        alike = pairs_alike(kb, conn, known)
    groups = duplicate_titles(kb)
    edited = edited_articles(kb, groups)
    merges = {p for m in plan_merges(kb, alike, groups, edited) for p in m.gone}
    findings: list[Finding] = []
    for group in groups:
        first = group[0]
        for other in group[1:]:
            note = ""
            if other.path in merges:
                note = "; the two came from revisions of one source"
            elif hand := next((p for p in (other.path, first.path) if p in edited), ""):
                note = (
                    f"; {hand} holds a person's lines ({edited[hand]}), which --fix never "
                    "deletes: move them into the other article and delete it, or keep both"
                )
            findings.append(
                Finding(
                    "duplicate-title",
                    WARNING,
                    other.path,
                    f"has the title of {first.path} ({first.title!r}){note}",
                    fixable=other.path in merges or first.path in merges,
                )
            )
        findings += _undated_disagreements(group)
    for a, b, score, why in alike:
        findings.append(
            Finding(
                "revision-alike",
                WARNING,
                b.raw_path,
                f"looks like a revision of {a.raw_path} ({why}, similarity {score:.2f}): if it "
                f"is, compile it again with --revises {a.id} (or give it kb-id: {a.id})",
            )
        )
    return findings


def duplicate_titles(kb: KnowledgeBase) -> list[list[Article]]:
    """Articles sharing a title (case and spacing aside), each group in path order."""
    with closing(open_state(kb)) as conn:
        fingerprint = get_meta(conn, INDEX_FINGERPRINT)
    by_title: dict[str, list[str]] = {}
    for entry in current_catalog(kb, fingerprint):
        by_title.setdefault(title_key(entry.title), []).append(entry.path)
    groups = []
    for paths in by_title.values():
        if len(paths) > 1:
            articles = [a for a in (_read(kb, p) for p in sorted(paths)) if a is not None]
            if len(articles) > 1:
                groups.append(articles)
    return groups


def edited_articles(kb: KnowledgeBase, groups: Iterable[list[Article]]) -> dict[str, str]:
    """The articles of ``groups`` that hold a person's lines: path -> who wrote them."""
    out = {}
    for article in (a for group in groups for a in group):
        hand = find_hand_edit(kb, article.path)
        if hand is not None and person_lines(hand):
            out[article.path] = hand.by()
    return out


def plan_merges(
    kb: KnowledgeBase,
    alike: Iterable[tuple],
    groups: list[list[Article]] | None = None,
    edited: dict[str, str] | None = None,
) -> list[Merge]:
    """The duplicate groups whose articles each come from one source, all revisions of
    one another: kept, the article of the newest revision (by when it was ingested);
    gone, the others, but for those that hold a person's lines (``edited``)."""
    linked = {frozenset((a.raw_path, b.raw_path)) for a, b, _, _ in alike}
    groups = duplicate_titles(kb) if groups is None else groups
    edited = edited_articles(kb, groups) if edited is None else edited
    merges = []
    for group in groups:
        single = [a for a in group if len(a.sources) == 1]
        if len(single) < 2:
            continue
        raws = [a.sources[0] for a in single]
        if not all(frozenset(p) in linked for p in combinations(set(raws), 2)):
            continue
        when = {r: (_ingested(kb, r), _commits_to(kb, r)) for r in raws}
        newest = max(single, key=lambda a: (when[a.sources[0]], a.updated, a.path))
        gone = [a for a in single if a.path != newest.path and a.path not in edited]
        if not gone:
            continue
        staying = {a.sources[0] for a in single if a not in gone}  # the kept, the edited
        merges.append(
            Merge(
                kept=newest.path,
                gone=tuple(a.path for a in gone),
                raw_gone=tuple(sorted({a.sources[0] for a in gone} - {*staying})),
                raw_kept=newest.sources[0],
            )
        )
    return merges


def merge_revisions(kb: KnowledgeBase) -> tuple[list[Merge], str | None]:
    """Merge the duplicates that came from revisions of one source; one commit."""
    lock = compile_lock(kb)
    if not lock.acquire(blocking=False):
        raise UsageError(
            "a compile of this knowledge base is running; lint --fix waits for none",
            hint="run `kb-ai lint --fix` again when it has finished",
        )
    try:
        with closing(open_state(kb)) as conn:
            merges = plan_merges(kb, pairs_alike(kb, conn, all_sources(conn)))
            if not merges:
                return [], None
            repointed = _apply(kb, conn, merges)
        lines = [
            f"merged {', '.join(m.gone)} into {m.kept}: revisions of one source "
            f"({', '.join(m.raw_gone) or 'the same raw copy'} -> {m.raw_kept})"
            for m in merges
        ]
        lines += [f"links in {p} lead to the article kept" for p in repointed]
        append_log(kb, "lint --fix", lines)
        head = f"lint --fix: merged {sum(len(m.gone) for m in merges)} duplicate article(s)"
        return merges, commit_all(kb, head + "\n\n" + "\n".join(lines))
    finally:
        lock.release()


def _apply(kb: KnowledgeBase, conn, merges: list[Merge]) -> list[str]:
    """Merge; the articles whose links to a merged copy now lead to the one kept."""
    moved = {raw: m.raw_kept for m in merges for raw in m.raw_gone}
    article_moved = {path: m.kept for m in merges for path in m.gone}
    repointed = repoint_links(kb, article_moved)  # while the copies are there to resolve
    with conn:  # every origin compiled into a copy that went is known as the one kept
        discard(kb, conn, list(article_moved), list(moved))
        for origin, row in all_sources(conn).items():
            raw = moved.get(row["raw_path"], row["raw_path"])
            articles = sorted({article_moved.get(p, p) for p in source_articles(row)})
            conn.execute(
                "UPDATE sources SET raw_path = ?, articles = ? WHERE origin = ?",
                (raw, json.dumps(articles, ensure_ascii=False), origin),
            )
    if repointed:  # Chat searches their new text at once
        refresh_search_index(kb, conn, repointed)
    return repointed


def _undated_disagreements(group: list[Article]) -> list[Finding]:
    """Sentences of two same-titled articles alike but for a number, neither dated."""
    found = []
    for a, b in combinations(group, 2):
        mine = _numbered(a.body)
        for shape, sentence in _numbered(b.body).items():
            other = mine.get(shape)
            if other is None or other == sentence:
                continue
            if any(_DATED.search(s) or _years(s) for s in (other, sentence)):
                continue
            found.append(
                Finding(
                    "undated-disagreement",
                    WARNING,
                    b.path,
                    f"says {sentence!r} where {a.path} says {other!r}, and no date says "
                    "which is current",
                )
            )
            break  # one per pair is enough to say they disagree
    return found


def _numbered(body: str) -> dict[str, str]:
    """The body's sentences holding a number, by their shape (numbers blanked)."""
    out = {}
    for sentence in _SENTENCE.split(body):
        sentence = sentence.strip(" -*>#\t")
        if _NUMBER.search(sentence) and len(sentence) > 12:
            out.setdefault(_NUMBER.sub("#", sentence.lower()), sentence)
    return out


def _years(sentence: str) -> bool:
    return any(1900 <= int(n) <= 2100 for n in re.findall(r"\b\d{4}\b", sentence))


def _commits_to(kb: KnowledgeBase, raw: str) -> int:
    """How far down the history the raw copy last changed: ``ingested_at`` has whole
    seconds, so copies compiled within one second are told apart by their commits."""
    try:
        last = git(kb, "log", "-1", "--format=%H", "--", raw).strip()
        return int(git(kb, "rev-list", "--count", last).strip()) if last else 0
    except (KbAiError, ValueError):
        return 0


def _ingested(kb: KnowledgeBase, raw: str) -> str:
    try:
        return read_raw(kb, raw).ingested_at
    except (KbAiError, OSError, UnicodeDecodeError):
        return ""


def _read(kb: KnowledgeBase, path: str) -> Article | None:
    try:
        return read_article(kb, path)
    except (KbAiError, OSError, UnicodeDecodeError):
        return None
