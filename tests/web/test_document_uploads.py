"""Uploading documents: a PDF larger than a text source may be (a 20 MB report is normal)
is taken up to max_document_bytes, held to it while it streams in, and refused past it
with a 413 that names the limit and the setting."""

import asyncio
import dataclasses
import io
import os

from starlette.datastructures import Headers

from tests.conftest import needs_shared_data, shared_data
from tests.web.conftest import make_client, wait_for
from web.multipart import CappedParser, file_limit

DATA = shared_data("documents")
pytestmark = needs_shared_data("documents")
MB = 1_000_000


def big_pdf(size: int) -> bytes:
    """A real three-page PDF of about ``size`` bytes: the invoice, with an attachment of
    random bytes (what makes real reports large: scans, pictures, embedded files)."""
    from pypdf import PdfWriter

    writer = PdfWriter(clone_from=DATA / "REPAIR-2022-INV-001_multipage.pdf")
    writer.add_attachment("archive.bin", os.urandom(size))
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_a_pdf_larger_than_max_source_bytes_uploads_and_compiles(settings, model, kb):
    pdf = big_pdf(6 * MB)
    assert len(pdf) > settings.max_source_bytes  # 5 MB: the old limit of every upload
    with make_client(settings, model) as client:
        r = client.post("/api/submit", files=[("files", ("report.pdf", pdf, "application/pdf"))])
        assert r.status_code == 202, r.text
        task = wait_for(client, r.json()["tasks"][0]["id"], timeout=60.0)
        assert task["state"] == "done", task["error"]
    raw = next((kb.root / "raw").glob("*.md")).read_text(encoding="utf-8")
    assert "<!-- page 3 -->" in raw


def test_a_document_over_max_document_bytes_is_refused_naming_the_setting(settings, model):
    small = dataclasses.replace(settings, max_document_bytes=2 * MB)
    pdf = big_pdf(3 * MB)
    with make_client(small, model, start_worker=False) as client:
        files = [("files", ("report.pdf", pdf, "application/pdf"))]
        r = client.post("/api/submit", files=files)
        assert r.status_code == 413, r.text
        error = r.json()["error"]
        assert "report.pdf" in error and "2,000,000-byte" in error
        assert "max_document_bytes" in error
        # a text file is still held to a source's limit, named as such
        files = [("files", ("notes.md", b"# Notes\n\n" + b"word " * 1_100_000, "text/markdown"))]
        r = client.post("/api/submit", files=files)
        assert r.status_code == 413 and "max_source_bytes" in r.json()["error"]
        assert client.get("/api/tasks").json()["tasks"] == []


def test_the_other_files_of_a_request_are_queued_when_one_is_too_large(settings, model):
    small = dataclasses.replace(settings, max_document_bytes=2 * MB)
    files = [
        ("files", ("report.pdf", big_pdf(3 * MB), "application/pdf")),
        ("files", ("invoice.pdf", (DATA / "REPAIR-2022-INV-001_multipage.pdf").read_bytes(),
                   "application/pdf")),
    ]  # fmt: skip
    with make_client(small, model, start_worker=False) as client:
        r = client.post("/api/submit", files=files)
        assert r.status_code == 202, r.text
        assert [t["filename"] for t in r.json()["tasks"]] == ["invoice.pdf"]
        assert [x["filename"] for x in r.json()["rejected"]] == ["report.pdf"]


def test_a_file_past_its_limit_is_dropped_as_it_streams_in(settings, model):
    """Not spooled whole and then refused: what passes the limit is never stored."""
    boundary = "kbaiboundary"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; "
            f"filename=\"scan.pdf\"\r\nContent-Type: application/pdf\r\n\r\n").encode()  # fmt: skip
    body = head + b"%PDF-1.7\n" + b"x" * (5 * MB) + f"\r\n--{boundary}--\r\n".encode()
    headers = Headers({"content-type": f"multipart/form-data; boundary={boundary}"})

    async def stream():
        for i in range(0, len(body), 65_536):
            yield body[i : i + 65_536]

    parser = CappedParser(
        headers,
        stream(),
        limit_of=lambda name: file_limit(name, max_text_bytes=MB, max_document_bytes=MB),
        max_files=5,
        max_fields=5,
        max_part_size=MB,
    )
    form = asyncio.run(parser.parse())
    upload = form.getlist("files")[0]
    assert parser.limit_passed(upload).setting == "max_document_bytes"
    assert upload.size <= MB
    upload.file.close()
