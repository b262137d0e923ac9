"""Links in an article body, and whether they lead anywhere.

Two kinds: ``[[target|label]]`` wikilinks (compiler/links.py writes ``[[slug|mention]]``;
a person may write a path, type/slug, a slug or a title, resolved as the web pages do)
and Markdown links to ``.md`` files inside the knowledge base (``wiki/...``, ``raw/...``
or relative to the article). External links are not followed. Code is never read.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from wiki.catalog import normalise_article_path
from wiki.slugs import slugify

__all__ = ["Link", "LinkResolver", "body_links", "kb_path", "unlink"]

_WIKILINK = re.compile(r"\[\[([^\[\]\n]{1,300})\]\]")
_MDLINK = re.compile(r"(?<!!)\[([^\]\n]*)\]\(([^)\s]+)(?:\s+\"[^\"\n]*\")?\)")
_CODE = re.compile(r"`[^`\n]*`")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Link:
    kind: str  # "wikilink" | "link"
    text: str  # as written, whole
    target: str  # the wikilink target, or the KB-relative path a link leads to
    label: str


class LinkResolver:
    """Which article a wikilink target names: by path, type/slug, slug or title."""

    def __init__(self, articles: Iterable[tuple[str, str]]) -> None:
        self.by_key: dict[str, str] = {}
        self._titles: list[tuple[str, str]] = []
        self._by_title_slug: dict[str, str] | None = None  # built on the first miss
        for path, title in articles:
            slug = posixpath.basename(path)[:-3]
            typed = path.removeprefix("wiki/")[:-3]
            for key in (path, typed, slug, title.casefold()):
                if key:
                    self.by_key.setdefault(key, path)
            self._titles.append((path, title))

    def find(self, target: str) -> str | None:
        t = target.strip()
        norm = normalise_article_path(t) if t else ""
        for key in (norm, norm.removeprefix("wiki/")[:-3], t.casefold()):
            if key and key in self.by_key:
                return self.by_key[key]
        if not t:
            return None
        if self._by_title_slug is None:
            self._by_title_slug = {}
            for path, title in self._titles:
                self._by_title_slug.setdefault(slugify(title), path)
        slug = slugify(t)
        return self.by_key.get(slug) or self._by_title_slug.get(slug)


def body_links(body: str, base: str) -> list[Link]:
    """The wikilinks and in-KB Markdown links of ``body`` (an article at ``base``)."""
    links: list[Link] = []
    for line in prose_lines(body):
        line = _CODE.sub(" ", line)
        for m in _WIKILINK.finditer(line):
            target, _, label = m.group(1).partition("|")
            target = target.split("#", 1)[0].strip()
            links.append(Link("wikilink", m.group(), target, (label or target).strip()))
        for m in _MDLINK.finditer(line):
            path = kb_path(m.group(2), base)
            if path is not None:
                links.append(Link("link", m.group(), path, m.group(1)))
    return links


def unlink(body: str, dead: Callable[[Link], bool], base: str) -> tuple[str, int]:
    """``body`` with each link ``dead`` picks replaced by its label; and how many."""
    count = 0

    def keep_label(kind: str) -> Callable[[re.Match[str]], str]:
        def replace(m: re.Match[str]) -> str:
            nonlocal count
            if kind == "wikilink":
                target, _, label = m.group(1).partition("|")
                link = Link(kind, m.group(), target.split("#", 1)[0].strip(), "")
                text = (label or target).strip()
            else:
                path = kb_path(m.group(2), base)
                if path is None:
                    return m.group()
                link, text = Link(kind, m.group(), path, m.group(1)), m.group(1)
            if not dead(link):
                return m.group()
            count += 1
            return text

        return replace

    out: list[str] = []
    in_fence = False
    for line in body.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence:
            pieces, position = [], 0
            for code in _CODE.finditer(line):  # code spans stay as written
                pieces.append(_rewrite(line[position : code.start()], keep_label))
                pieces.append(code.group())
                position = code.end()
            pieces.append(_rewrite(line[position:], keep_label))
            line = "".join(pieces)
        out.append(line)
    return "\n".join(out), count


def _rewrite(text: str, keep_label: Callable[[str], Callable[[re.Match[str]], str]]) -> str:
    text = _WIKILINK.sub(keep_label("wikilink"), text)
    return _MDLINK.sub(keep_label("link"), text)


def prose_lines(body: str) -> Iterable[str]:
    """The lines of ``body`` outside fenced code blocks (the fences left out too)."""
    in_fence = False
    for line in body.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence:
            yield line


def kb_path(href: str, base: str) -> str | None:
    """The KB-relative ``.md`` path ``href`` leads to, or None for anything else."""
    parts = urlsplit(href)
    if parts.scheme or parts.netloc or not parts.path:
        return None
    path = unquote(parts.path)
    if not path.startswith(("wiki/", "raw/", "/")):
        path = posixpath.normpath(posixpath.join(posixpath.dirname(base), path))
    path = path.lstrip("/")
    if not path.endswith(".md"):
        return None
    return path
