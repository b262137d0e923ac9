"""Reading pages whole (cut at a budget, visibly) and keeping citations honest."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from kb_ai.errors import KbAiError, NotFoundError, PathEscapeError
from retrieval.dated import page_date
from wiki import KnowledgeBase, body_start_line, normalise_article_path, read_article, read_raw

_LINK = re.compile(r"\[([^\]\n]{1,300})\]\(([^)\s]{1,300})\)")
_WIKILINK = re.compile(r"\[\[([^\]|#\n]{1,200})(?:#[^\]|\n]*)?(?:\|[^\]\n]*)?\]\]")


@dataclass(frozen=True)
class Page:
    path: str
    title: str
    text: str
    cut: bool
    date: str = ""  # YYYY-MM-DD the page speaks from (retrieval/dated.py), "" if none
    first_line: int = 1  # the line of the file ``text`` begins on (frontmatter counted)


@dataclass(frozen=True)
class Citation:
    title: str
    path: str

    @property
    def kb(self) -> str:
        """The other knowledge base the page is from (``also``), "" for this one's."""
        return self.path.split("/", 2)[1] if self.path.startswith("also/") else ""

    def as_dict(self) -> dict[str, str]:
        cited = {"title": self.title, "path": self.path}
        return cited | {"kb": self.kb} if self.kb else cited


def cut_marker(omitted: int) -> str:
    return f"\n\n[… cut here: {omitted:,} more characters of this page were not read]"


def read_page(kb: KnowledgeBase, path: str, budget_chars: int) -> Page:
    """An article's body without frontmatter, cut at budget_chars with a visible marker."""
    full = kb.resolve(path, under="wiki")
    article = read_article(kb, path)
    body = article.body.strip()
    first = body_start_line(full.read_text(encoding="utf-8", errors="replace"), article.body)
    first += article.body[: len(article.body) - len(article.body.lstrip())].count("\n")
    date = page_date(article.title, body, article.sources) or page_date(
        "", "", _origins(kb, article.sources)
    )
    if len(body) <= budget_chars:
        return Page(path, article.title, body, False, date, first)
    head = body[:budget_chars]
    space = head.rfind("\n")
    if space > budget_chars * 0.8:
        head = head[:space]
    return Page(path, article.title, head + cut_marker(len(body) - len(head)), True, date, first)


def _origins(kb: KnowledgeBase, sources: list[str]) -> list[str]:
    """Where the article's raw sources came from (their ``origin``: the file a person
    compiled, "notes/2026-03-20-session-ttl.md"), for the date in its name: raw/ names a
    source by its title, which seldom keeps the date its file name had."""
    found = []
    for entry in sources:
        rel = entry.partition("#")[0].strip()
        if not (rel.startswith("raw/") and rel.endswith(".md")):
            continue
        try:
            origin = read_raw(kb, rel).origin
        except (OSError, ValueError, KbAiError):  # a source gone or unreadable: no date from it
            continue
        found.append(origin.replace("\\", "/"))
    return found


def check_paths(kb: KnowledgeBase, paths: list[str]) -> list[str]:
    """Paths a user named (`--paths`), normalised and checked: inside wiki/, and existing."""
    out = []
    for raw in paths:
        path = normalise_article_path(raw)
        if not path.startswith("wiki/"):
            path = f"wiki/{path}"
        try:
            full = kb.resolve(path, under="wiki")
        except PathEscapeError as exc:
            raise PathEscapeError(
                f"{raw!r} is outside the wiki", hint="name pages as wiki/<type>/<slug>.md"
            ) from exc
        if not full.is_file():
            raise NotFoundError(
                f"No article {raw!r} in this wiki", hint="see index/master-index.md for the paths"
            )
        if path not in out:
            out.append(path)
    return out


def link_targets(pages: list[Page]) -> tuple[list[str], list[str]]:
    """What the pages point at: Markdown link targets as article paths, and [[wikilinks]]
    as slugs (or paths, when they name one), in order of appearance."""
    paths: list[str] = []
    slugs: list[str] = []
    for page in pages:
        for m in _LINK.finditer(page.text):
            target = normalise_article_path(m.group(2))
            if target.startswith("wiki/"):
                paths.append(target)
        for m in _WIKILINK.finditer(page.text):
            name = m.group(1).strip()
            if "/" in name:
                paths.append(normalise_article_path(name))
            else:
                slugs.append(re.sub(r"[^\w]+", "-", name.lower()).strip("-"))
    return list(dict.fromkeys(paths)), list(dict.fromkeys(slugs))


def validate_citations(answer: str, pages: list[Page]) -> tuple[str, list[Citation]]:
    """Keep citations of pages that were read (rewritten to their canonical path), remove
    the rest. Returns the cleaned answer and the cited pages in order of first citation."""
    by_path = {p.path: p for p in pages}
    cited: list[Citation] = []

    def fix(m: re.Match[str]) -> str:
        target = m.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # an outside link, not a citation
            return m.group(0)
        path = normalise_article_path(target)
        if not path.startswith(("wiki/", "raw/", "also/")):  # raw/: a source; also/: another KB
            path = f"wiki/{path}"
        page = by_path.get(path)
        if page is None:
            return ""
        if all(c.path != path for c in cited):
            cited.append(Citation(page.title, path))
        return f"[{m.group(1)}]({path})"

    cleaned = _LINK.sub(fix, answer)
    cleaned = outside_code(cleaned, _tidy_gaps)
    return cleaned.strip(), cited


_CODE_SPAN = re.compile(r"(`[^`\n]+`)")


def outside_code(text: str, tidy: Callable[[str], str]) -> str:
    """``text`` with ``tidy`` applied to all but its code spans, which are quoted as the
    page writes them (`SELECT ... FOR UPDATE`)."""
    parts = _CODE_SPAN.split(text)
    return "".join(part if i % 2 else tidy(part) for i, part in enumerate(parts))


def _tidy_gaps(text: str) -> str:
    """The gaps a removed citation leaves: a space before a stop (not before an
    ellipsis, "wait ... then"), empty brackets, doubled spaces."""
    text = re.sub(r"[ \t]+([.,;:])(?!\.)", r"\1", text)
    text = re.sub(r"\(\s*\)|\[\s*\]", "", text)
    return re.sub(r"[ \t]{2,}", " ", text)
