"""One entry point for every document type: bytes and a name in, a Document out, or a
DocumentError that names the cause. Nothing here touches the network: converters are
called directly by format (no content sniffing service, no plugin, no LLM captioning)."""

from __future__ import annotations

from dataclasses import dataclass

from compiler.documents.document import Document
from compiler.documents.formats import format_of, supported_summary
from kb_ai.errors import DocumentError

_MAGIC = {
    "pdf": (b"%PDF",),
    "docx": (b"PK\x03\x04",),
    "pptx": (b"PK\x03\x04",),
    "xlsx": (b"PK\x03\x04",),
    "epub": (b"PK\x03\x04",),
    "zip": (b"PK\x03\x04", b"PK\x05\x06"),
    "xls": (b"\xd0\xcf\x11\xe0",),
    "msg": (b"\xd0\xcf\x11\xe0",),
}


@dataclass(frozen=True)
class ConvertOptions:
    max_sheet_rows: int = 5_000
    url: str = ""  # where a web page came from (for its links and metadata)
    max_text_bytes: int = 0  # converted text longer than this is refused (0: no limit)


def convert_options(settings, *, url: str = "") -> ConvertOptions:  # noqa: ANN001 - Settings
    """The conversion limits of a knowledge base's settings."""
    return ConvertOptions(
        max_sheet_rows=settings.max_sheet_rows,
        url=url,
        max_text_bytes=settings.max_source_bytes,
    )


def convert_document(data: bytes, name: str, options: ConvertOptions | None = None) -> Document:
    """The document ``name`` (its bytes in ``data``) as Markdown with provenance markers."""
    options = options or ConvertOptions()
    fmt = format_of(name)
    if fmt is None or fmt == "zip":
        raise DocumentError(
            f"{name}: kb-ai does not know this file type",
            cause="unsupported",
            hint=f"documents it reads: {supported_summary()}; and text files",
        )
    if not data.strip():
        raise DocumentError(f"{name}: the file is empty", cause="no_text")
    magic = _MAGIC.get(fmt)
    if magic and not data.startswith(magic):
        raise DocumentError(
            f"{name}: not a {fmt.upper()} file (its first bytes say otherwise: corrupt, "
            "or another type under this name)",
            cause="corrupt",
        )
    damaged = _damaged_errors(fmt)
    try:
        doc = _convert(data, name, fmt, options)
    except damaged as exc:
        reason = (str(exc).splitlines() or [""])[0][:120] or type(exc).__name__
        raise DocumentError(
            f"{name}: not a readable {fmt.upper()} file (corrupt or truncated: {reason})",
            cause="corrupt",
            hint="open it in its application and save it again",
        ) from exc
    size = len(doc.text.encode("utf-8"))
    if options.max_text_bytes and size > options.max_text_bytes:
        # a document may be large for its pictures; its text is held to a source's limit
        raise DocumentError(
            f"{name}: {size:,} bytes of text once converted, over the "
            f"{options.max_text_bytes:,}-byte limit of a source (max_source_bytes)",
            cause="too_large",
            hint="split the document, or raise max_source_bytes in kb-ai.toml",
        )
    return doc


def _convert(data: bytes, name: str, fmt: str, options: ConvertOptions) -> Document:
    if fmt == "pdf":
        from compiler.documents.pdf import convert_pdf

        return convert_pdf(data, name)
    if fmt in ("xlsx", "xls", "csv"):
        from compiler.documents.sheets import convert_sheet

        return convert_sheet(data, name, fmt, max_rows=options.max_sheet_rows)
    if fmt == "html":
        from compiler.documents.webpage import convert_html

        return convert_html(data, name, url=options.url)
    if fmt == "eml":
        from compiler.documents.mail import convert_eml

        return convert_eml(data, name)
    from compiler.documents.office import convert_office

    return convert_office(data, name, fmt)


def _damaged_errors(fmt: str) -> tuple[type[BaseException], ...]:
    """What the parsers of ``fmt`` raise on a damaged file. The libraries share no error
    class; each kind listed here is a broken input, never a bug of kb-ai's to hide."""
    import csv
    import struct
    import zipfile
    import zlib
    from xml.etree.ElementTree import ParseError

    common: tuple[type[BaseException], ...] = (
        ValueError, KeyError, IndexError, EOFError, UnicodeError, OSError, struct.error,
        zlib.error, zipfile.BadZipFile, ParseError, csv.Error, RecursionError,
        NotImplementedError,  # zipfile: an unknown compression or version (a damaged header)
    )  # fmt: skip
    if fmt == "pdf":
        import pypdfium2
        from pypdf.errors import PyPdfError

        return (*common, pypdfium2.PdfiumError, PyPdfError)
    if fmt == "xls":
        import xlrd
        from xlrd.compdoc import CompDocError

        return (*common, xlrd.XLRDError, CompDocError, AssertionError)
    if fmt in ("docx", "pptx", "epub", "ipynb", "msg", "feed", "html"):
        from lxml.etree import LxmlError
        from markitdown import MarkItDownException

        return (*common, LxmlError, MarkItDownException)
    return common
