"""How the converter for each format was chosen: MarkItDown (the anchor) against the
alternatives, on shared/data/documents. Needs the alternatives installed, in a scratch
environment (they are not kb-ai's dependencies):

    python -m venv /tmp/docvenv && /tmp/docvenv/bin/pip install "markitdown[all]" \\
        pypdf pypdfium2 trafilatura lxml_html_clean
    /tmp/docvenv/bin/python bench/documents/compare.py

Prints seconds, characters and whether page boundaries survive, per tool and file.
"""

from __future__ import annotations

import io
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "documents"
PDFS = ["GeoTopo-komprimiert.pdf", "REPAIR-2022-INV-001_multipage.pdf", "habibi.pdf", "test.pdf"]
PAGES = ["test_blog.html", "test_serp.html"]


def markitdown(data: bytes, name: str) -> list[str]:
    from markitdown import MarkItDown, StreamInfo

    md = MarkItDown(enable_plugins=False)
    result = md.convert_stream(
        io.BytesIO(data), stream_info=StreamInfo(extension=Path(name).suffix)
    )
    return [result.markdown]  # one run of text: no page boundaries


def pypdf_pages(data: bytes, name: str) -> list[str]:
    from pypdf import PdfReader

    return [p.extract_text() or "" for p in PdfReader(io.BytesIO(data)).pages]


def pdfium_pages(data: bytes, name: str) -> list[str]:
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(data)
    return [doc[i].get_textpage().get_text_range() for i in range(len(doc))]


def pdfplumber_pages(data: bytes, name: str) -> list[str]:
    import pdfplumber

    with pdfplumber.open(io.BytesIO(data)) as pdf:
        return [p.extract_text() or "" for p in pdf.pages]


def trafilatura_main(data: bytes, name: str) -> list[str]:
    import trafilatura

    return [trafilatura.extract(data, output_format="markdown", include_tables=True) or ""]


def main() -> None:
    cases = [
        (f, t) for f in PDFS for t in (markitdown, pypdf_pages, pdfium_pages, pdfplumber_pages)
    ]
    cases += [(f, t) for f in PAGES for t in (markitdown, trafilatura_main)]
    print("| file | tool | seconds | characters | pages kept |")
    print("|---|---|---:|---:|---:|")
    for name, tool in cases:
        data = (DATA / name).read_bytes()
        started = time.perf_counter()
        parts = tool(data, name)
        took = time.perf_counter() - started
        chars = sum(len(p) for p in parts)
        kept = len(parts) if len(parts) > 1 or tool.__name__.endswith("pages") else "no"
        print(f"| {name} | {tool.__name__} | {took:.2f} | {chars:,} | {kept} |")


if __name__ == "__main__":
    main()
