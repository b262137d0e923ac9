"""Articles: the wiki pages, wiki/<type>/<slug>.md, with their frontmatter."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from kb_ai.errors import KbAiError, NotFoundError, UsageError
from wiki._frontmatter import dump_document, load_document
from wiki.files import atomic_write_text
from wiki.hand_edits import drop_base
from wiki.slugs import is_slug

if TYPE_CHECKING:
    from wiki.layout import KnowledgeBase

log = logging.getLogger(__name__)
SUMMARY_MAX = 200
# Never part of a title or any other one-line value: C0 and C1 controls (NUL among them)
# and the bidirectional controls that can make text read differently than it is stored
# ("report\u202egpj.exe"). Line breaks and tabs become spaces in one_line.
_INVISIBLE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


@dataclass
class Article:
    """One article. ``path`` is KB-relative: "wiki/<type>/<slug>.md"; dates are ISO strings."""

    path: str
    title: str
    type: str
    summary: str
    tags: list[str]
    sources: list[str]
    created: str
    updated: str
    body: str
    keys: list[str] = field(default_factory=list)
    # the hand edits whose lines the article holds and was written with, as their
    # source: "a1b2c3d by Ann Example" (compiler/hand_edits.py)
    edits: list[str] = field(default_factory=list)


def read_article(kb: KnowledgeBase, rel: str) -> Article:
    """The article at ``rel``. A hand-edited file may lack keys: they get defaults."""
    path = kb.resolve(rel, under="wiki")
    if not path.is_file():
        raise NotFoundError(f"no article {rel}", hint="list the articles with `kb-ai list`")
    rel = kb.relpath(path)
    meta, body = load_document(path.read_text(encoding="utf-8"), rel)
    return article_from(rel, meta, body)


def body_start_line(text: str, body: str) -> int:
    """The line (1-based) of the file ``text`` on which its ``body`` (what
    load_document gave back) begins: line numbers of a citation are the file's."""
    text = text.removeprefix("\ufeff")
    if not body or not text.endswith(body):
        return 1
    return text.count("\n") - body.count("\n") + 1


def article_from(rel: str, meta: dict[str, Any], body: str) -> Article:
    """The article at ``rel`` from its parsed frontmatter and body (see read_article)."""
    parts = rel.split("/")
    return Article(
        path=rel,
        title=one_line(meta.get("title"))
        or _first_heading(body)
        or parts[-1].removesuffix(".md").replace("-", " "),
        type=one_line(meta.get("type")) or (parts[1] if len(parts) > 2 else ""),
        summary=one_line(meta.get("summary")),
        tags=_str_list(meta.get("tags")),
        sources=_str_list(meta.get("sources")),
        created=one_line(meta.get("created")),
        updated=one_line(meta.get("updated")),
        body=body,
        keys=_str_list(meta.get("keys")),
        edits=_str_list(meta.get("edits")),
    )


def write_article(kb: KnowledgeBase, article: Article) -> Article:
    """Write ``article`` atomically; returns it as written (summary cut to 200 chars)."""
    written = normalise_article(kb, article)
    atomic_write_text(kb.resolve(written.path, under="wiki"), article_text(written))
    return written


def normalise_article(kb: KnowledgeBase, article: Article) -> Article:
    """``article`` as :func:`write_article` would store it (its path checked)."""
    path = kb.resolve(article.path, under="wiki")
    rel = kb.relpath(path)
    parts = rel.split("/")
    if (
        len(parts) != 3
        or not parts[2].endswith(".md")
        or not all(is_slug(p) for p in (parts[1], parts[2][:-3]))
    ):
        raise UsageError(
            f"{article.path!r} is not an article path",
            hint="articles live at wiki/<type>/<slug>.md",
        )
    if article.type != parts[1]:
        raise UsageError(f"{rel} is in wiki/{parts[1]}/ but its type is {article.type!r}")
    return replace(
        article,
        path=rel,
        title=one_line(article.title),
        summary=cut_summary(article.summary),
        tags=_dedupe(article.tags),
        keys=_dedupe(article.keys),
        sources=_dedupe(article.sources),
        edits=_dedupe(article.edits),
        created=_iso(article.created),
        updated=_iso(article.updated),
    )


def article_text(article: Article) -> str:
    """The file an article is stored as: YAML frontmatter, then the body. The article is
    taken as it is: :func:`write_article` normalises it first."""
    meta: dict[str, Any] = {
        "title": article.title,
        "type": article.type,
        "summary": article.summary,
        "tags": article.tags,
    }
    if article.keys:
        meta["keys"] = article.keys
    meta["sources"] = article.sources
    if article.edits:
        meta["edits"] = article.edits
    meta |= {"created": article.created, "updated": article.updated}
    return dump_document(meta, article.body)


def list_articles(kb: KnowledgeBase) -> list[str]:
    """The KB-relative paths of all articles, sorted."""
    return sorted(rel for rel, _ in _article_files(kb))


def article_mtimes(kb: KnowledgeBase) -> dict[str, int]:
    """Every article's path with its ``st_mtime_ns``: one stat per article."""
    return {rel: entry.stat().st_mtime_ns for rel, entry in _article_files(kb)}


def read_articles(
    kb: KnowledgeBase,
    rels: Iterable[str],
    read: Callable[[KnowledgeBase, str], Article] | None = None,
) -> Iterator[Article]:
    """The articles at ``rels`` that can be read (with ``read``, by default
    :func:`read_article`); one that cannot (not UTF-8, broken frontmatter, no permission)
    is skipped with a warning, so it never takes the whole wiki down with it."""
    for rel in rels:
        try:
            yield (read or read_article)(kb, rel)
        except (OSError, ValueError, KbAiError) as exc:
            log.warning("skipped %s: it cannot be read (%s)", rel, exc)


def _article_files(kb: KnowledgeBase) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """What an article file is: a plain file ``wiki/<type>/<name>.md``, hidden names left
    out. Symbolic links (to a folder or a file) are skipped with a warning and never read:
    one could lead anywhere on the machine."""
    try:
        with os.scandir(kb.wiki_dir) as it:
            folders = [d for d in it if _plain_entry(d, "wiki/", folder=True)]
    except (FileNotFoundError, NotADirectoryError):
        return
    for folder in folders:
        try:
            with os.scandir(folder.path) as it:
                entries = list(it)
        except OSError as exc:
            log.warning("skipped wiki/%s/: it cannot be read (%s)", folder.name, exc)
            continue
        for entry in entries:
            where = f"wiki/{folder.name}/"
            if entry.name.endswith(".md") and _plain_entry(entry, where, folder=False):
                yield f"{where}{entry.name}", entry


def _plain_entry(entry: os.DirEntry[str], where: str, *, folder: bool) -> bool:
    """Whether ``entry`` is a visible plain folder (or file), not a link to one."""
    if entry.name.startswith("."):
        return False
    if entry.is_symlink():
        log.warning("skipped %s%s: it is a symbolic link (articles must be plain files)",
                    where, entry.name)  # fmt: skip
        return False
    try:
        is_plain = entry.is_dir if folder else entry.is_file
        return is_plain(follow_symlinks=False)
    except OSError:
        return False


def delete_article(kb: KnowledgeBase, rel: str) -> bool:
    """Remove the article at ``rel`` (and kb-ai's kept version of it, if it held a hand
    edit); False if there was none."""
    path = kb.resolve(rel, under="wiki")
    if not path.is_file():
        return False
    path.unlink()
    drop_base(kb, rel)
    if path.parent != kb.wiki_dir:
        # An emptied type folder goes; another write of the same run may be putting a file
        # in it at this moment (compile writes run in threads), and then it stays.
        with suppress(OSError):
            if not any(path.parent.iterdir()):
                path.parent.rmdir()
    return True


def article_body_text(kb: KnowledgeBase, rel: str) -> str:
    """The body of the article at ``rel``, without its frontmatter."""
    return read_article(kb, rel).body


def cut_summary(summary: str, limit: int = SUMMARY_MAX) -> str:
    """``summary`` on one line and at most ``limit`` characters (cut ends with "…")."""
    text = one_line(summary)
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:.") + "…"


_SEPARATOR = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_TAG = re.compile(r"<[^>]+>")


def derive_keys(body: str, limit: int = 16) -> list[str]:
    """The first cell of each Markdown table data row in ``body``, in order, de-duplicated.

    Header and separator rows are skipped, as are tables inside code fences; markup
    (``**``, backticks, links, HTML tags) is stripped from the cells.
    """
    keys: list[str] = []
    lines = [line.strip() for line in body.split("\n")]
    fence = ""
    in_table = False
    separator_row = -1
    for i, line in enumerate(lines):
        if fence:
            fence = "" if line.startswith(fence) else fence
            continue
        if line.startswith(("```", "~~~")):
            fence, in_table = line[:3], False
            continue
        if i == separator_row:
            continue
        if in_table and "|" in line:
            key = _plain(_first_cell(line))
            if key and key not in keys:
                keys.append(key)
                if len(keys) >= limit:
                    break
            continue
        next_line = lines[i + 1] if i + 1 < len(lines) else ""
        in_table = "|" in line and "|" in next_line and bool(_SEPARATOR.match(next_line))
        separator_row = i + 1 if in_table else -1
    return keys


def _first_cell(row: str) -> str:
    cells = _CELL_SPLIT.split(row)
    return cells[1] if row.startswith("|") and len(cells) > 1 else cells[0]


def _plain(cell: str) -> str:
    cell = _TAG.sub(" ", _LINK.sub(r"\1", cell)).replace("\\|", "|")
    for mark in ("**", "__", "~~", "`"):
        cell = cell.replace(mark, "")
    cell = cell.strip()
    if len(cell) >= 2 and cell[0] == cell[-1] and cell[0] in "*_":
        cell = cell[1:-1]
    return " ".join(cell.split())


def _first_heading(body: str) -> str:
    for line in body.split("\n"):
        if line.startswith("# "):
            return one_line(line[2:])
    return ""


def _iso(value: object) -> str:
    """A date or datetime as its ISO string; anything else as a one-line string."""
    isoformat = getattr(value, "isoformat", None)
    return isoformat() if callable(isoformat) else one_line(value)


def visible_text(text: str) -> str:
    """``text`` without control characters (tab and line breaks kept) and without the
    bidirectional controls."""
    return _INVISIBLE.sub("", text)


def one_line(value: object) -> str:
    """``value`` as one line of text: whitespace runs become one space, and control and
    bidirectional-override characters are dropped (they never belong in a title)."""
    return "" if value is None else " ".join(visible_text(str(value)).split())


def _str_list(value: object) -> list[str]:
    if value is None or value == "":
        return []
    items = value if isinstance(value, list) else str(value).split(",")
    return _dedupe(one_line(item) for item in items if not isinstance(item, (dict, list)))


def _dedupe(items: Any) -> list[str]:
    out: list[str] = []
    for item in items:
        item = one_line(item)
        if item and item not in out:
            out.append(item)
    return out
