"""`kb-ai lint`: what is wrong with a wiki, found without a model.

Each finding names a check, a severity, the file and what to do. Errors are what makes
the wiki wrong for a reader or for ask (a link to nothing, an index that lists what is
not there or misses what is, a frontmatter that does not parse, a source an article
cites that is gone); warnings are what deserves a look (an article no source backs, a
source that fed nothing, a number or name its sources never state, search tables that
ask would rebuild anyway). :func:`lint_wiki` takes what it knows of each article from
wiki/lintfacts.py (read once, then kept until the file or its sources' extractions
change), and reads the master index and the state tables: the checks over the whole
wiki see every article each time (bench/truth has the figures).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from wiki.articles import list_articles
from wiki.catalog import index_lines
from wiki.indexing import CATALOG_MIGRATIONS
from wiki.layout import KnowledgeBase
from wiki.linkcheck import LinkResolver
from wiki.lintfacts import REQUIRED_FIELDS, ArticleFacts, gather_facts
from wiki.raw import list_raw
from wiki.schema import apply_migrations
from wiki.search import SearchIndex

__all__ = ["ERROR", "WARNING", "Finding", "LintReport", "REQUIRED_FIELDS", "lint_wiki"]

ERROR = "error"
WARNING = "warning"
_MAX_CLAIMS_SHOWN = 5


@dataclass(frozen=True)
class Finding:
    """One thing wrong. ``fixable``: `kb-ai lint --fix` repairs it without a model."""

    check: str
    severity: str
    path: str
    message: str
    fixable: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class LintReport:
    articles: int = 0
    findings: list[Finding] = field(default_factory=list)
    fixed: list[Finding] = field(default_factory=list)
    commit: str | None = None

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == WARNING]

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": not self.errors,
            "articles": self.articles,
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "findings": [f.as_dict() for f in self.findings],
            "fixed": [f.as_dict() for f in self.fixed],
            "commit": self.commit,
        }


def lint_wiki(kb: KnowledgeBase, conn: sqlite3.Connection | None = None) -> LintReport:
    """Every structural finding in ``kb``, sorted by file then check. With ``conn`` (the
    KB's state.db) the state tables are checked too, and what is known of each
    unchanged article is kept there between runs."""
    findings: list[Finding] = []
    on_disk = list_articles(kb)
    facts = gather_facts(kb, on_disk, conn)
    articles = _readable(facts, findings)
    raw = set(list_raw(kb))
    findings += _link_findings(raw, on_disk, articles)
    findings += _index_findings(kb, on_disk, articles)
    findings += _source_findings(raw, articles)
    findings += _claim_findings(articles)
    findings += _conflict_findings(articles)
    if conn is not None:
        findings += table_findings(conn, articles.values())
    findings.sort(key=lambda f: (f.path, f.check, f.message))
    return LintReport(articles=len(on_disk), findings=findings)


def _readable(facts: dict[str, ArticleFacts], findings: list[Finding]) -> dict[str, ArticleFacts]:
    """The articles whose file parses; a finding for each that does not, or lacks a field."""
    articles: dict[str, ArticleFacts] = {}
    for rel, f in facts.items():
        if f.error is not None:
            findings.append(Finding("frontmatter", ERROR, rel, f.error))
            continue
        if f.missing:
            findings.append(
                Finding("frontmatter", ERROR, rel, f"the frontmatter lacks {', '.join(f.missing)}")
            )
        articles[rel] = f
    return articles


def _link_findings(
    raw: set[str], on_disk: list[str], articles: dict[str, ArticleFacts]
) -> list[Finding]:
    resolver = LinkResolver([(p, articles[p].title if p in articles else "") for p in on_disk])
    known = set(on_disk)
    findings = []
    for rel, article in articles.items():
        for kind, text, target in article.links:
            if kind == "wikilink":
                if resolver.find(target) is None:
                    findings.append(
                        Finding(
                            "dead-wikilink", ERROR, rel, f"{text} names no article", fixable=True
                        )
                    )
            elif target not in known and target not in raw:
                findings.append(
                    Finding("dead-link", ERROR, rel, f"{text} leads to no file", fixable=True)
                )
    return findings


def _index_findings(
    kb: KnowledgeBase, on_disk: list[str], articles: dict[str, ArticleFacts]
) -> list[Finding]:
    index = "index/master-index.md"
    if not kb.master_index_path.is_file():
        if not on_disk:
            return []
        return [Finding("index", ERROR, index, "there is no master index", fixable=True)]
    entries = index_lines(kb.master_index_path.read_text(encoding="utf-8"))
    listed = dict(entries)
    findings = []
    for rel in on_disk:
        if rel not in articles:
            continue  # its frontmatter is the finding: the index cannot list it as it is
        if rel not in listed:
            findings.append(Finding("unindexed", ERROR, rel, "no index lists it", fixable=True))
        elif listed[rel] != articles[rel].line:
            findings.append(
                Finding(
                    "index-stale",
                    WARNING,
                    rel,
                    "its master-index line does not match its title, summary or keys",
                    fixable=True,
                )
            )
    disk = set(on_disk)
    for path, _ in entries:
        if path not in disk:
            findings.append(
                Finding(
                    "index-orphan",
                    ERROR,
                    index,
                    f"lists {path}, which is not an article",
                    fixable=True,
                )
            )
    return findings


def _source_findings(raw: set[str], articles: dict[str, ArticleFacts]) -> list[Finding]:
    fed: set[str] = set()
    findings = []
    for rel, article in articles.items():
        if not article.sources:
            findings.append(Finding("no-source", WARNING, rel, "no source backs it"))
        for source in (s.split("#", 1)[0] for s in article.sources):  # "raw/x.md#pages=3-5"
            fed.add(source)
            if source not in raw:
                findings.append(
                    Finding(
                        "missing-source",
                        ERROR,
                        rel,
                        f"cites {source}, which is not in raw/ (recompile or `kb-ai rm` it)",
                    )
                )
    for source in sorted(raw - fed):
        findings.append(Finding("unused-source", WARNING, source, "no article draws on it"))
    return findings


def _claim_findings(articles: dict[str, ArticleFacts]) -> list[Finding]:
    findings = []
    for rel, article in articles.items():
        claims = article.unsupported
        if claims:
            shown = ", ".join(f"{kind} {text!r}" for kind, text in claims[:_MAX_CLAIMS_SHOWN])
            more = f" and {len(claims) - _MAX_CLAIMS_SHOWN} more" if len(claims) > 5 else ""
            findings.append(
                Finding(
                    "unsupported",
                    WARNING,
                    rel,
                    f"its sources never state {shown}{more}",
                )
            )
    return findings


def _conflict_findings(articles: dict[str, ArticleFacts]) -> list[Finding]:
    """Same-date disagreements the writer stated as a conflict, for a person to settle."""
    return [
        Finding("conflict", WARNING, rel, f"its sources disagree: {line}")
        for rel, article in articles.items()
        for line in article.conflicts
    ]


def table_findings(conn: sqlite3.Connection, articles: Iterable[ArticleFacts]) -> list[Finding]:
    """Where the catalog-lines and search tables in state.db differ from the articles."""
    articles = list(articles)
    apply_migrations(conn, "catalog_lines", CATALOG_MIGRATIONS)
    lines = dict(conn.execute("SELECT path, line FROM catalog_lines").fetchall())
    want = {a.path: a.line for a in articles}
    stale_lines = sorted(p for p in want if lines.get(p) != want[p]) + sorted(
        set(lines) - set(want)
    )
    stale_search = SearchIndex(conn).stale_hashes({a.path: a.search for a in articles})
    findings = []
    for name, stale in (("catalog_lines", stale_lines), ("search", stale_search)):
        if stale:
            listed = ", ".join(stale[:3]) + (", ..." if len(stale) > 3 else "")
            findings.append(
                Finding(
                    "tables",
                    WARNING,
                    ".kb-ai/state.db",
                    f"the {name} table is out of step with {len(stale)} article(s): {listed}",
                    fixable=True,
                )
            )
    return findings
