"""The document types kb-ai converts, by file extension, and how each is described."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

# extension -> (format name, how it is shown in --help and on the Submit page)
FORMATS: dict[str, tuple[str, str]] = {
    ".pdf": ("pdf", "PDF (text layer; page markers)"),
    ".docx": ("docx", "Word .docx"),
    ".pptx": ("pptx", "PowerPoint .pptx (slide markers)"),
    ".xlsx": ("xlsx", "Excel .xlsx (sheet markers)"),
    ".xlsm": ("xlsx", "Excel .xlsm"),
    ".xls": ("xls", "Excel 97-2003 .xls"),
    ".csv": ("csv", "CSV (any encoding)"),
    ".tsv": ("csv", "TSV"),
    ".html": ("html", "web pages .html (main content only)"),
    ".htm": ("html", "web pages .htm"),
    ".epub": ("epub", "EPUB books"),
    ".ipynb": ("ipynb", "Jupyter notebooks"),
    ".msg": ("msg", "Outlook .msg"),
    ".eml": ("eml", "e-mail .eml"),
    ".rss": ("feed", "RSS feeds"),
    ".atom": ("feed", "Atom feeds"),
    ".xml": ("feed", "RSS/Atom .xml (other XML is refused)"),
    ".zip": ("zip", "zip archives (each member a source)"),
}
DOCUMENT_EXTENSIONS = frozenset(FORMATS)


def format_of(name: str) -> str | None:
    """The format of a file name ("pdf", "docx", ...), or None when it is not a document."""
    entry = FORMATS.get(PurePosixPath(name).suffix.lower())
    return entry[0] if entry else None


def supported_types() -> list[str]:
    """One line per kind of document, for help texts (extensions grouped by format)."""
    seen: dict[str, list[str]] = {}
    labels: dict[str, str] = {}
    for ext, (fmt, label) in FORMATS.items():
        seen.setdefault(fmt, []).append(ext)
        labels.setdefault(fmt, label)
    return [f"{' '.join(exts)}: {labels[fmt]}" for fmt, exts in seen.items()]


def supported_summary() -> str:
    """The supported extensions on one line."""
    return ", ".join(sorted(DOCUMENT_EXTENSIONS))


def wanted_in_folder(path: Path) -> bool:
    """Whether a file found in a folder is a document to compile: a known type, and for
    .xml an RSS or Atom feed (a folder's other XML, a pom.xml, is not a source)."""
    suffix = path.suffix.lower()
    if suffix not in DOCUMENT_EXTENSIONS:
        return False
    if suffix != ".xml":
        return True
    try:
        with path.open("rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return b"<rss" in head or b"<feed" in head or b"<rdf:RDF" in head
