"""`kb-ai lint`: what is wrong with a wiki, found without a model.

Each finding names a check, a severity, the file and what to do. Errors are what makes
the wiki wrong for a reader or for ask (a link to nothing, an index that lists what is
not there or misses what is, a frontmatter that does not parse, a source an article
cites that is gone); warnings are what deserves a look (an article no source backs, a
source that fed nothing, a number or name its sources never state, search tables that
ask would rebuild anyway). :func:`lint_wiki` reads every article once, each source's
extraction once, the master index and the state tables: a wiki of 1,000 articles in well
under a second (bench/truth).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from kb_ai.errors import KbAiError
from wiki._frontmatter import load_document
from wiki.articles import Article, article_from, list_articles
from wiki.catalog import entry_for, format_entry, parse_master_index
from wiki.claims import ClaimChecker
from wiki.extraction import read_extraction_data
from wiki.indexing import CATALOG_MIGRATIONS, search_doc
from wiki.layout import KnowledgeBase
from wiki.linkcheck import LinkResolver, body_links
from wiki.raw import list_raw
from wiki.search import SearchIndex
from wiki.state import apply_migrations

__all__ = ["ERROR", "WARNING", "Finding", "LintReport", "REQUIRED_FIELDS", "lint_wiki"]

ERROR = "error"
WARNING = "warning"
REQUIRED_FIELDS = ("title", "type", "summary", "sources", "created", "updated")
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
    """Every structural finding in ``kb``, sorted by file then check."""
    findings: list[Finding] = []
    on_disk = list_articles(kb)
    articles = _read_articles(kb, on_disk, findings)
    findings += _link_findings(kb, on_disk, articles)
    findings += _index_findings(kb, on_disk, articles)
    findings += _source_findings(kb, articles)
    findings += _claim_findings(kb, articles)
    findings += _conflict_findings(articles)
    if conn is not None:
        findings += table_findings(conn, articles.values())
    findings.sort(key=lambda f: (f.path, f.check, f.message))
    return LintReport(articles=len(on_disk), findings=findings)


def _read_articles(
    kb: KnowledgeBase, on_disk: list[str], findings: list[Finding]
) -> dict[str, Article]:
    """The articles whose file parses; a finding for each that does not, or lacks a field.

    Read once each, straight from the paths list_articles found inside wiki/ (a symlink
    is reported, not followed)."""
    articles: dict[str, Article] = {}
    for rel in on_disk:
        path = kb.root / rel
        if path.is_symlink():
            findings.append(Finding("frontmatter", ERROR, rel, "a symlink, not an article file"))
            continue
        try:
            meta, body = load_document(path.read_text(encoding="utf-8"), rel)
        except UnicodeDecodeError:
            findings.append(Finding("frontmatter", ERROR, rel, "the file is not UTF-8 text"))
            continue
        except KbAiError as exc:
            findings.append(Finding("frontmatter", ERROR, rel, _first_line(str(exc))))
            continue
        missing = [name for name in REQUIRED_FIELDS if name not in meta]
        if missing:
            findings.append(
                Finding("frontmatter", ERROR, rel, f"the frontmatter lacks {', '.join(missing)}")
            )
        articles[rel] = article_from(rel, meta, body)
    return articles


def _link_findings(
    kb: KnowledgeBase, on_disk: list[str], articles: dict[str, Article]
) -> list[Finding]:
    resolver = LinkResolver([(p, articles[p].title if p in articles else "") for p in on_disk])
    raw = set(list_raw(kb))
    known = set(on_disk)
    findings = []
    for rel, article in articles.items():
        for link in body_links(article.body, rel):
            if link.kind == "wikilink":
                if resolver.find(link.target) is None:
                    findings.append(
                        Finding(
                            "dead-wikilink",
                            ERROR,
                            rel,
                            f"{link.text} names no article",
                            fixable=True,
                        )
                    )
            elif link.target not in known and link.target not in raw:
                findings.append(
                    Finding("dead-link", ERROR, rel, f"{link.text} leads to no file", fixable=True)
                )
    return findings


def _index_findings(
    kb: KnowledgeBase, on_disk: list[str], articles: dict[str, Article]
) -> list[Finding]:
    index = "index/master-index.md"
    if not kb.master_index_path.is_file():
        if not on_disk:
            return []
        return [Finding("index", ERROR, index, "there is no master index", fixable=True)]
    entries = parse_master_index(kb.master_index_path.read_text(encoding="utf-8"), keep_lines=True)
    listed = {e.path: e for e in entries}
    findings = []
    for rel in on_disk:
        if rel not in articles:
            continue  # its frontmatter is the finding: the index cannot list it as it is
        if rel not in listed:
            findings.append(Finding("unindexed", ERROR, rel, "no index lists it", fixable=True))
        elif listed[rel].line != format_entry(entry_for(articles[rel])):
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
    for entry in entries:
        if entry.path not in disk:
            findings.append(
                Finding(
                    "index-orphan",
                    ERROR,
                    index,
                    f"lists {entry.path}, which is not an article",
                    fixable=True,
                )
            )
    return findings


def _source_findings(kb: KnowledgeBase, articles: dict[str, Article]) -> list[Finding]:
    raw = set(list_raw(kb))
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


def _claim_findings(kb: KnowledgeBase, articles: dict[str, Article]) -> list[Finding]:
    material: dict[str, str | None] = {}
    findings = []
    for rel, article in articles.items():
        sources = [s.split("#", 1)[0] for s in article.sources]  # "raw/x.md#pages=3-5"
        texts = [t for t in (_material(kb, s, material) for s in sources) if t]
        if not texts:
            continue  # no source (reported), or none extracted: nothing to hold it to
        checker = ClaimChecker(article.title, *texts)
        claims = checker.unsupported(article.body)
        if claims:
            shown = ", ".join(f"{c.kind} {c.text!r}" for c in claims[:_MAX_CLAIMS_SHOWN])
            more = f" and {len(claims) - _MAX_CLAIMS_SHOWN} more" if len(claims) > 5 else ""
            findings.append(
                Finding(
                    "unsupported",
                    WARNING,
                    rel,
                    f"its sources' extractions never state {shown}{more}",
                )
            )
    return findings


_CONFLICT = re.compile(r"^\s*(?:[-*>]\s*)*\**Conflict\b[^:\n]{0,40}:.*$", re.M)


def _conflict_findings(articles: dict[str, Article]) -> list[Finding]:
    """Same-date disagreements the writer stated as a conflict, for a person to settle."""
    findings = []
    for rel, article in articles.items():
        if "Conflict" not in article.body:
            continue
        for m in _CONFLICT.finditer(article.body):
            line = " ".join(m.group().split())
            shown = line if len(line) <= 200 else line[:199] + "…"
            findings.append(Finding("conflict", WARNING, rel, f"its sources disagree: {shown}"))
    return findings


def _material(kb: KnowledgeBase, source: str, cache: dict[str, str | None]) -> str | None:
    """The text of a source's stored extraction (and the source's title), or None."""
    if source not in cache:
        slug = source.removeprefix("raw/").removesuffix(".md")
        try:
            data = read_extraction_data(kb, slug)
        except (KbAiError, OSError, UnicodeDecodeError):
            cache[source] = None
        else:
            cache[source] = "\n".join(_strings(data))
    return cache[source]


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif value is not None:
        yield str(value)


def table_findings(conn: sqlite3.Connection, articles: Iterable[Article]) -> list[Finding]:
    """Where the catalog-lines and search tables in state.db differ from the articles."""
    articles = list(articles)
    apply_migrations(conn, "catalog_lines", CATALOG_MIGRATIONS)
    lines = dict(conn.execute("SELECT path, line FROM catalog_lines").fetchall())
    want = {a.path: format_entry(entry_for(a)) for a in articles}
    stale_lines = sorted(p for p in want if lines.get(p) != want[p]) + sorted(
        set(lines) - set(want)
    )
    stale_search = SearchIndex(conn).stale_paths(search_doc(a) for a in articles)
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


def _first_line(text: str) -> str:
    return text.split("\n", 1)[0]
