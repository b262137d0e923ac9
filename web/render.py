"""Markdown to safe HTML for the wiki pages.

Raw HTML in a document is never passed through (markdown-it with ``html`` off), link
schemes other than http(s), mailto and relative ones are dropped by markdown-it's own
link validation, and ``[[wikilinks]]`` and links between articles become links to the
article pages. What a submitted document says can be read, never run.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from html import escape
from urllib.parse import quote, urlsplit

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from mdit_py_plugins.tasklists import tasklists_plugin

from wiki import CatalogEntry, normalise_article_path, slugify
from wiki.linkcheck import kb_path

_EXTERNAL = re.compile(r"^(?:https?:|mailto:)", re.I)


class WikiLinks:
    """Resolves what a ``[[target]]`` may say: a path, type/slug, a slug, or a title."""

    def __init__(self, entries: Iterable[CatalogEntry]) -> None:
        self.by_key: dict[str, CatalogEntry] = {}
        for e in entries:
            slug = posixpath.basename(e.path)[:-3]
            typed = e.path.removeprefix("wiki/")[:-3]
            for key in (e.path, typed, slug, e.title.casefold(), slugify(e.title)):
                self.by_key.setdefault(key, e)

    def find(self, target: str) -> CatalogEntry | None:
        t = target.strip()
        for key in (
            normalise_article_path(t),
            normalise_article_path(t).removeprefix("wiki/")[:-3],
            t.casefold(),
            slugify(t) if t else "",
        ):
            if key and key in self.by_key:
                return self.by_key[key]
        return None


def article_url(path: str) -> str:
    """The page of the article at KB-relative ``path`` ("wiki/type/slug.md")."""
    return "/" + quote(path)


def _wikilink_rule(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    if not src.startswith("[[", pos):
        return False
    end = src.find("]]", pos + 2)
    inner = src[pos + 2 : end] if end > 0 else ""
    if not inner.strip() or "\n" in inner or "[" in inner or len(inner) > 300:
        return False
    if not silent:
        target, _, label = inner.partition("|")
        token = state.push("wikilink", "", 0)
        token.meta = {"target": target.split("#", 1)[0].strip(), "label": (label or target).strip()}
    state.pos = end + 2
    return True


class _Renderer(RendererHTML):
    def wikilink(self, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        meta = tokens[idx].meta
        links: WikiLinks | None = env.get("links")
        found = links.find(meta["target"]) if links else None
        label = escape(meta["label"])
        if found is None:
            return f'<span class="wikilink missing" title="no such article">{label}</span>'
        return f'<a class="wikilink" href="{escape(article_url(found.path))}">{label}</a>'

    def link_open(self, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        token = tokens[idx]
        href = str(token.attrGet("href") or "")
        if _EXTERNAL.match(href):
            token.attrSet("rel", "noopener noreferrer nofollow")
        else:
            token.attrSet("href", _local_href(href, env.get("base", "")))
        return self.renderToken(tokens, idx, options, env)


def _local_href(href: str, base: str) -> str:
    """A link inside the KB as the server serves it; anything else as it was."""
    path = kb_path(href, base)
    if path is None or path.startswith(".."):
        return href
    parts = urlsplit(href)
    frag = f"#{parts.fragment}" if parts.fragment else ""
    if path.startswith("wiki/"):
        return article_url(path) + frag
    if path.startswith("raw/"):
        return "/sources/" + quote(path) + frag
    if path.startswith("also/"):  # another knowledge base's page (web/also.py serves it)
        return "/" + quote(path) + frag
    return href


def _line_numbers(state: StateCore) -> None:
    """Each block (paragraph, list item, table row, heading, quote) says which lines of
    the file it comes from (``data-lines="12-14"``), when the caller gave the line the
    text begins on: an answer's citation ``#L12-L14`` is highlighted by kb.js."""
    first = state.env.get("first_line")
    if not first:
        return
    for token in state.tokens:
        if token.map and (token.nesting == 1 or token.type in ("fence", "code_block")):
            start, end = token.map
            token.attrSet("data-lines", f"{start + first}-{max(end - 1, start) + first}")


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.use(tasklists_plugin)
    md.inline.ruler.before("link", "wikilink", _wikilink_rule)
    md.core.ruler.after("block", "line_numbers", _line_numbers)
    md.renderer = _Renderer(md)
    return md


_MD = _markdown()


def render_markdown(
    text: str, *, base: str = "", links: WikiLinks | None = None, first_line: int = 0
) -> str:
    """Safe HTML for ``text``; ``base`` is the KB-relative path relative links start from;
    ``first_line``: the line of its file ``text`` begins on, to mark each block with its
    lines (0: not marked)."""
    return _MD.render(text, {"base": base, "links": links, "first_line": first_line})


# Summaries and other one-liners: code spans and emphasis only (no links, no HTML), so a
# summary shown beside an article's link reads as its article does, without raw backticks.
_INLINE = MarkdownIt("zero", {"html": False}).enable(
    ["backticks", "emphasis", "escape", "strikethrough"]
)


def render_inline(text: str) -> str:
    """Safe HTML for one line of Markdown: `code`, *emphasis*, ~~strike~~; nothing else."""
    return _INLINE.renderInline(text)


def diff_lines(diff: str) -> list[tuple[str, str]]:
    """(css class, line) for each line of a unified diff, for a template to escape and show."""
    out = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---", "diff ", "index ")):
            kind = "meta"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "ctx"
        out.append((kind, line))
    return out
