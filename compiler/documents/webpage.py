"""Web pages: the main content only (trafilatura drops navigation, ads, cookie banners and
the rest of a page's boilerplate), as Markdown with its tables; MarkItDown's whole-page
conversion when trafilatura finds no main content (a page that is all table, say)."""

from __future__ import annotations

import io

from compiler.documents.document import Document, clean_text, has_text
from kb_ai.errors import DocumentError


def convert_html(data: bytes, name: str, *, url: str = "") -> Document:
    import trafilatura

    text = trafilatura.extract(
        data,
        url=url or None,
        output_format="markdown",
        include_tables=True,
        include_comments=False,
        include_links=False,
        include_images=False,
    )
    text = clean_text(text or "")
    if not has_text(text):
        text = _whole_page(data, name)
    if not has_text(text):
        raise DocumentError(f"{name}: the page holds no text", cause="no_text")
    return Document(text=text, title=page_title(data), format="html")


def page_title(data: bytes) -> str:
    """The page's <title> (trafilatura's metadata pass would cost seconds on first use)."""
    from lxml import etree, html

    try:
        tree = html.fromstring(data)
    except (etree.ParserError, ValueError):
        return ""
    title = tree.findtext(".//title") or ""
    return " ".join(title.split())[:120]


def _whole_page(data: bytes, name: str) -> str:
    from markitdown import StreamInfo
    from markitdown.converters import HtmlConverter

    result = HtmlConverter().convert(io.BytesIO(data), StreamInfo(extension=".html", filename=name))
    return clean_text(result.markdown or "")
