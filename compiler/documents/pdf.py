"""PDF: the text layer page by page (pypdfium2, PDFium's own text extraction), with a page
marker before each page and the bookmark outline as headings where its sections start.

Pages with right-to-left script are read again with pypdf, which returns them in reading
order (PDFium gives the visual order). PDFium was chosen over MarkItDown's pdfminer/pdfplumber path for page boundaries (MarkItDown
returns one run of text) and speed (the 117-page thesis: 0.4 s against 18 s); see
docs/benchmarks-documents.md.
"""

from __future__ import annotations

import logging
import re
import threading

from compiler.documents.document import Document, clean_text, has_text
from compiler.documents.markers import page_marker
from kb_ai.errors import DocumentError

_RTL = re.compile(r"[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]")
# PDFium is not thread-safe: one conversion at a time in this process.
_PDFIUM = threading.Lock()
# Fewer visible characters than this per page on average: a scan without a text layer.
MIN_CHARS_PER_PAGE = 16
MAX_OUTLINE = 500
MAX_DEPTH = 16  # pypdfium2 logs a complaint when an outline is deeper


def convert_pdf(data: bytes, name: str) -> Document:
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    with _PDFIUM:
        try:
            pdf = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            if getattr(exc, "err_code", None) == pdfium_c.FPDF_ERR_PASSWORD:
                raise DocumentError(
                    f"{name}: the PDF is password-protected (encrypted)",
                    cause="encrypted",
                    hint="save an unprotected copy and compile that",
                ) from exc
            raise DocumentError(
                f"{name}: not a readable PDF (corrupt or truncated)",
                cause="corrupt",
                hint="open it in a PDF viewer and save it again",
            ) from exc
        try:
            headings = _outline(pdf)
            pages: list[str] = []
            for index in range(len(pdf)):
                page = pdf[index]
                textpage = page.get_textpage()
                try:
                    text = clean_text(textpage.get_text_range())
                finally:
                    textpage.close()
                    page.close()
                if _RTL.search(text):  # PDFium gives right-to-left text in visual order
                    text = _logical_order(data, index) or text
                parts = [f"{'#' * level} {title}" for level, title in headings.get(index, [])]
                pages.append("\n\n".join([*parts, page_marker(index + 1), text]).strip())
            title = (pdf.get_metadata_dict().get("Title") or "").strip()
        finally:
            pdf.close()
    text = "\n\n".join(pages)
    if not has_text(text, per_unit=MIN_CHARS_PER_PAGE, units=len(pages)):
        raise DocumentError(
            f"{name}: the PDF has no text layer ({len(pages)} page(s) of images, a scan?)",
            cause="no_text",
            hint="run it through OCR (e.g. ocrmypdf) and compile the result",
        )
    return Document(text=text, title=title[:120], format="pdf", units=len(pages))


def _logical_order(data: bytes, index: int) -> str:
    """One page's text from pypdf, which keeps Arabic and Hebrew in reading order."""
    import io

    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its repairs are not the user's news
    try:
        return clean_text(PdfReader(io.BytesIO(data)).pages[index].extract_text() or "")
    except (PdfReadError, ValueError, KeyError, IndexError):
        return ""


def _outline(pdf) -> dict[int, list[tuple[int, str]]]:  # noqa: ANN001 - a PdfDocument
    """Bookmarks by the page they point at: {page index: [(heading level, title)]}; the
    first two levels only (deeper ones are too fine to split a document at)."""
    out: dict[int, list[tuple[int, str]]] = {}
    for i, mark in enumerate(pdf.get_toc(max_depth=MAX_DEPTH)):
        if i >= MAX_OUTLINE:
            break
        dest = mark.get_dest()
        index = dest.get_index() if dest is not None else None
        title = " ".join((mark.get_title() or "").split())[:120]
        if index is None or not title:
            continue
        if mark.level <= 1:
            out.setdefault(index, []).append((mark.level + 1, title))
    return out
