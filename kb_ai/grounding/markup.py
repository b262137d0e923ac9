"""HTML in place of Markdown: found, converted when it is simple prose markup, refused
when it is not.

Small models often answer "write Markdown" with ``<p>`` blocks, sometimes inside a
``<markdown>`` element. Paragraphs, headings, lists, emphasis, code and links convert
one to one; anything else (tables, scripts, forms, images, styles) is refused rather
than guessed at.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

# Tag names an HTML reply uses; "<T>" in prose or "<https://...>" are not among them.
_HTML_TAG_NAMES = (
    "a abbr article aside b blockquote body br caption center code col colgroup dd del div "
    "dl dt em embed figure font footer form h1 h2 h3 h4 h5 h6 head header hr html i iframe "
    "img input ins kbd label li link main mark markdown meta nav object ol p pre s samp "
    "script section small span strike strong style sub sup table tbody td tfoot th thead "
    "title tr tt u ul var video"
)
_HTML_TAGS = _HTML_TAG_NAMES.split()
_TAG = re.compile(r"</?(" + "|".join(_HTML_TAGS) + r")(?=[\s/>])[^<>]*>", re.I)
_CODE = re.compile(r"```.*?(?:```|$)|~~~.*?(?:~~~|$)|`[^`\n]*`", re.S)
_WRAPPER = re.compile(r"^\s*<markdown[^>]*>(.*?)(?:</markdown>\s*)?$", re.S | re.I)

_BLOCK = {"p", "div", "section", "article", "main", "header", "footer", "body", "html"}
_DROP = {"head", "title", "meta", "link"}
_INLINE = {"span", "font", "small", "u", "mark", "abbr", "ins", "sub", "sup", "center"}
_CONVERTED = (
    _BLOCK
    | _DROP
    | _INLINE
    | {"markdown", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "br", "hr"}
    | {"strong", "b", "em", "i", "code", "tt", "kbd", "samp", "var", "pre", "a"}
    | {"blockquote", "del", "s", "strike"}
)


class MarkupError(ValueError):
    """HTML that does not convert to Markdown faithfully; the message names what."""


def html_tags(text: str) -> list[str]:
    """The HTML tags in ``text`` outside code spans and fences, in order, lower case."""
    return [m.group(1).lower() for m in _TAG.finditer(_CODE.sub(" ", text))]


def is_html(text: str) -> bool:
    """Whether ``text`` carries HTML markup (outside code) rather than Markdown."""
    return bool(html_tags(text))


def strip_wrapper(text: str) -> str:
    """``text`` without a ``<markdown>...</markdown>`` element around it."""
    m = _WRAPPER.match(text)
    return m.group(1).strip() if m else text


def to_markdown(text: str) -> str:
    """Markdown for ``text``: unchanged when it has no HTML, converted when its HTML is
    prose markup (paragraphs, headings, lists, emphasis, code, links, quotes).

    Raises MarkupError when it holds markup without a faithful Markdown form.
    """
    text = strip_wrapper(text)
    tags = html_tags(text)
    if not tags:
        return text
    other = sorted(set(tags) - _CONVERTED)
    if other:
        raise MarkupError(
            "the reply is HTML with elements that have no Markdown form here: "
            + ", ".join(f"<{t}>" for t in other)
        )
    converter = _Converter()
    converter.feed(text)
    converter.close()
    return converter.markdown()


class _Converter(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.lists: list[list[int]] = []  # per open list: [is_ordered, next number]
        self.href: list[str | None] = []
        self.skip = 0
        self.pre = 0
        self.quote = 0

    def _break(self, blank: bool = True) -> None:
        self.out.append("\n\n" if blank else "\n")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _DROP:
            self.skip += 1
        elif tag in _BLOCK or tag == "markdown":
            self._break()
        elif tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self._break()
            self.out.append("#" * int(tag[1]) + " ")
        elif tag in ("ul", "ol"):
            self._break(blank=not self.lists)
            self.lists.append([tag == "ol", 1])
        elif tag == "li":
            self._break(blank=False)
            depth = max(len(self.lists) - 1, 0)
            ordered, number = self.lists[-1] if self.lists else (False, 1)
            marker = f"{number}." if ordered else "-"
            if self.lists:
                self.lists[-1][1] += 1
            self.out.append("  " * depth + marker + " ")
        elif tag == "br":
            self._break(blank=False)
        elif tag == "hr":
            self._break()
            self.out.append("---")
            self._break()
        elif tag in ("strong", "b"):
            self.out.append("**")
        elif tag in ("em", "i"):
            self.out.append("*")
        elif tag in ("del", "s", "strike"):
            self.out.append("~~")
        elif tag == "pre":
            self._break()
            self.out.append("```\n")
            self.pre += 1
        elif tag in ("code", "tt", "kbd", "samp", "var"):
            if not self.pre:
                self.out.append("`")
        elif tag == "a":
            self.href.append(dict(attrs).get("href"))
            self.out.append("[")
        elif tag == "blockquote":
            self._break()
            self.quote += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in _DROP:
            self.skip = max(self.skip - 1, 0)
        elif tag in _BLOCK or tag in ("h1", "h2", "h3", "h4", "h5", "h6", "markdown"):
            self._break()
        elif tag in ("ul", "ol"):
            if self.lists:
                self.lists.pop()
            self._break(blank=not self.lists)
        elif tag in ("strong", "b"):
            self.out.append("**")
        elif tag in ("em", "i"):
            self.out.append("*")
        elif tag in ("del", "s", "strike"):
            self.out.append("~~")
        elif tag == "pre":
            self.out.append("\n```")
            self.pre = max(self.pre - 1, 0)
            self._break()
        elif tag in ("code", "tt", "kbd", "samp", "var"):
            if not self.pre:
                self.out.append("`")
        elif tag == "a":
            href = self.href.pop() if self.href else None
            self.out.append(f"]({href})" if href else "]")
        elif tag == "blockquote":
            self.quote = max(self.quote - 1, 0)
            self._break()

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        at_line_start = not self.out or self.out[-1].endswith("\n")
        if not self.pre:
            data = re.sub(r"\s+", " ", data)
            if at_line_start:
                data = data.lstrip()
            if not data:
                return
            if self.quote and at_line_start:
                data = "> " + data
        self.out.append(data)

    def markdown(self) -> str:
        text = "".join(self.out)
        text = "\n".join(ln.rstrip() for ln in text.split("\n"))
        return re.sub(r"\n{3,}", "\n\n", text).strip()
