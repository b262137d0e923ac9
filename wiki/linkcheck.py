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

__all__ = ["Link", "LinkResolver", "body_links", "kb_path", "repoint", "rewrite_links", "unlink"]

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
    return rewrite_links(body, lambda link: link.label if dead(link) else None, base)


def repoint(
    body: str, moved: Callable[[Link], str | None], base: str, names: LinkResolver
) -> tuple[str, int]:
    """``body`` (of the article at ``base``) with each link to an article that ``moved``
    says went elsewhere (the KB path it returns) leading there instead, its label kept;
    a link moved to ``base`` itself becomes its label (an article does not link to
    itself). ``names``: the articles as they will be, to write the shortest wikilink
    target that names the new one (its slug, else type/slug). And how many."""

    def replace(link: Link) -> str | None:
        path = moved(link)
        if path is None:
            return None
        if path == base:
            return link.label
        if link.kind == "wikilink":
            slug, typed = posixpath.basename(path)[:-3], path.removeprefix("wiki/")[:-3]
            target = slug if names.find(slug) == path else typed
            written = link.text[2:-2].partition("|")[0]
            anchor = written[written.index("#") :].strip() if "#" in written else ""
            return f"[[{target}{anchor}|{link.label}]]"
        m = _MDLINK.fullmatch(link.text)
        if m is None:  # (not so: the text was found by this pattern)
            return None
        href = m.group(2)
        anchor = href[href.index("#") :] if "#" in href else ""
        if href.startswith("/"):
            new = "/" + path
        elif href.startswith(("wiki/", "raw/")):
            new = path
        else:
            new = posixpath.relpath(path, posixpath.dirname(base) or ".")
        start, end = m.span(2)
        return link.text[:start] + new + anchor + link.text[end:]

    return rewrite_links(body, replace, base)


def rewrite_links(body: str, replace: Callable[[Link], str | None], base: str) -> tuple[str, int]:
    """``body`` with each link for which ``replace`` gives a text written as that text
    (None: left as it is); code spans and fenced code stay as written. And how many."""
    count = 0

    def rewrite(kind: str) -> Callable[[re.Match[str]], str]:
        def one(m: re.Match[str]) -> str:
            nonlocal count
            if kind == "wikilink":
                target, _, label = m.group(1).partition("|")
                target = target.split("#", 1)[0].strip()
                link = Link(kind, m.group(), target, (label or target).strip())
            else:
                path = kb_path(m.group(2), base)
                if path is None:
                    return m.group()
                link = Link(kind, m.group(), path, m.group(1))
            text = replace(link)
            if text is None:
                return m.group()
            count += 1
            return text

        return one

    out: list[str] = []
    in_fence = False
    for line in body.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence:
            pieces, position = [], 0
            for code in _CODE.finditer(line):  # code spans stay as written
                pieces.append(_rewrite(line[position : code.start()], rewrite))
                pieces.append(code.group())
                position = code.end()
            pieces.append(_rewrite(line[position:], rewrite))
            line = "".join(pieces)
        out.append(line)
    return "\n".join(out), count


def _rewrite(text: str, rewrite: Callable[[str], Callable[[re.Match[str]], str]]) -> str:
    text = _WIKILINK.sub(rewrite("wikilink"), text)
    return _MDLINK.sub(rewrite("link"), text)


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
