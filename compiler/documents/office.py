"""Word, PowerPoint, EPUB, notebooks, Outlook .msg and RSS/Atom, through MarkItDown's
converters (called directly by format: no content sniffing, no plugins, no LLM or
cloud service, no URL fetching). Slide markers are rewritten to kb-ai's own."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable
from xml.etree.ElementTree import ParseError

from compiler.documents.document import Document, clean_text, has_text
from compiler.documents.markers import slide_marker
from kb_ai.errors import DocumentError

_SLIDE = re.compile(r"^<!-- Slide number: (\d+) -->$", re.M)
# What a converter raises on a damaged file (the libraries have no common error class).
BROKEN = (zipfile.BadZipFile, KeyError, ValueError, EOFError, ParseError, UnicodeDecodeError)

LABELS = {
    "docx": "Word document",
    "pptx": "PowerPoint file",
    "epub": "EPUB book",
    "ipynb": "notebook",
    "msg": "Outlook message",
    "feed": "RSS/Atom feed",
}


def _converter(fmt: str) -> Callable[[], object]:
    from markitdown import converters

    return {
        "docx": converters.DocxConverter,
        "pptx": converters.PptxConverter,
        "epub": converters.EpubConverter,
        "ipynb": converters.IpynbConverter,
        "msg": converters.OutlookMsgConverter,
        "feed": converters.RssConverter,
    }[fmt]


def convert_office(data: bytes, name: str, fmt: str) -> Document:
    from markitdown import FileConversionException, StreamInfo

    converter = _converter(fmt)()
    info = StreamInfo(extension="." + ("xml" if fmt == "feed" else fmt), filename=name)
    label = LABELS[fmt]
    if fmt == "feed" and not converter.accepts(io.BytesIO(data), info):  # type: ignore[attr-defined]
        raise DocumentError(
            f"{name}: XML that is not an RSS or Atom feed",
            cause="unsupported",
            hint="kb-ai reads feeds, not other XML; export it as text",
        )
    try:
        result = converter.convert(io.BytesIO(data), info)  # type: ignore[attr-defined]
    except (*BROKEN, FileConversionException) as exc:
        raise DocumentError(
            f"{name}: not a readable {label} (corrupt or truncated: {_reason(exc)})",
            cause="corrupt",
            hint="open it in its application and save it again",
        ) from exc
    text = clean_text(result.markdown or "")
    slides = 0
    if fmt == "pptx":
        slides = len(_SLIDE.findall(text))
        text = _SLIDE.sub(lambda m: slide_marker(int(m.group(1))), text)
    if not has_text(text):
        raise DocumentError(
            f"{name}: the {label} holds no text", cause="no_text", hint="nothing to compile"
        )
    return Document(text=text, title=(result.title or "").strip()[:120], format=fmt, units=slides)


def _reason(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:120] or type(exc).__name__
