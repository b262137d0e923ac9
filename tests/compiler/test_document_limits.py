"""Documents that must not take a run down: zip bombs, a million-row sheet, converters
that would reach the network. Each is refused (or capped) with a message, and the rest
of the run compiles."""

import asyncio
import dataclasses
import socket
import zipfile
from email.message import EmailMessage
from pathlib import Path

import pytest

from compiler import Compiler
from compiler.documents import convert_document
from kb_ai.errors import DocumentError
from tests.conftest import needs_shared_data, shared_data
from wiki import read_raw

DATA = shared_data("documents")
NOTE = "# Backups\n\nWe back up the database every night at 02:00 to the object store.\n"


def run_compile(kb, settings, llm, *paths):
    compiler = Compiler(kb, settings, llm_factory=lambda s, **k: llm)
    return asyncio.run(compiler.compile_paths([str(p) for p in paths]))


def raw_of(kb, origin_suffix):
    for p in (kb.root / "raw").glob("*.md"):
        src = read_raw(kb, f"raw/{p.name}")
        if src.origin.endswith(origin_suffix):
            return src
    raise AssertionError(f"no raw source for {origin_suffix}")


def test_zip_bombs_are_refused_and_the_rest_of_the_run_compiles(kb, settings, fake_llm, tmp_path):
    (tmp_path / "note.md").write_text(NOTE, encoding="utf-8")
    ratio = tmp_path / "ratio.zip"
    with zipfile.ZipFile(ratio, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("zeros.txt", b"\0" * 30_000_000)  # about 30 KB packed
    many = tmp_path / "many.zip"
    with zipfile.ZipFile(many, "w") as zf:
        for i in range(settings.max_archive_members + 1):
            zf.writestr(f"n{i}.md", f"# note {i}\n")
    result = run_compile(kb, settings, fake_llm, tmp_path / "note.md", ratio, many)

    errors = {Path(f.source).name: f.error for f in result.failed}
    assert "zip bomb" in errors["ratio.zip"] and "times its size" in errors["ratio.zip"]
    assert "zip bomb" in errors["many.zip"] and "files in the archive" in errors["many.zip"]
    assert [Path(p).name for p in result.compiled] == ["note.md"]
    assert result.commit


def test_an_archive_over_the_total_size_limit_is_refused(kb, settings, fake_llm, tmp_path):
    big = tmp_path / "big.zip"
    with zipfile.ZipFile(big, "w", zipfile.ZIP_DEFLATED) as zf:
        for i in range(3):
            zf.writestr(f"part{i}.md", ("# part\n" + "word " * 100_000).encode())
    small = dataclasses.replace(settings, max_archive_bytes=1_000_000)
    result = run_compile(kb, small, fake_llm, big)
    assert "once unpacked, over the limit" in result.failed[0].error
    assert not result.compiled


def write_xlsx(path: Path, rows: int) -> None:
    """An .xlsx of ``rows`` data rows, written as its XML parts (openpyxl would take
    minutes to write a million rows)."""
    ns = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(
            "[Content_Types].xml",
            '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
            'content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats'
            '-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-'
            'officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/'
            'sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml'
            '.worksheet+xml"/></Types>',
        )
        zf.writestr(
            "_rels/.rels",
            '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/'
            f'2006/relationships"><Relationship Id="rId1" Type="{rel}/officeDocument" '
            'Target="xl/workbook.xml"/></Relationships>',
        )
        zf.writestr(
            "xl/workbook.xml",
            f'<?xml version="1.0"?><workbook {ns} xmlns:r="{rel}"><sheets><sheet name="Orders" '
            'sheetId="1" r:id="rId1"/></sheets></workbook>',
        )
        zf.writestr(
            "xl/_rels/workbook.xml.rels",
            '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/'
            f'2006/relationships"><Relationship Id="rId1" Type="{rel}/worksheet" '
            'Target="worksheets/sheet1.xml"/></Relationships>',
        )
        with zf.open("xl/worksheets/sheet1.xml", "w") as f:
            f.write(
                f'<?xml version="1.0"?><worksheet {ns}><dimension ref="A1:B{rows + 1}"/>'
                '<sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>order</t></is></c>'
                '<c r="B1" t="inlineStr"><is><t>amount</t></is></c></row>'.encode()
            )
            for start in range(2, rows + 2, 50_000):
                batch = "".join(
                    f'<row r="{i}"><c r="A{i}"><v>{i - 1}</v></c><c r="B{i}"><v>{i % 97}</v></c></row>'
                    for i in range(start, min(start + 50_000, rows + 2))
                )
                f.write(batch.encode())
            f.write(b"</sheetData></worksheet>")


def test_a_million_row_sheet_is_capped_and_the_source_says_what_was_cut(
    kb, settings, fake_llm, tmp_path
):
    sheet = tmp_path / "orders.xlsx"
    write_xlsx(sheet, 1_000_000)
    result = run_compile(kb, settings, fake_llm, sheet)
    assert result.compiled, result.failed
    src = raw_of(kb, "orders.xlsx")
    assert "<!-- sheet: Orders -->" in src.text
    assert f"kept the first {settings.max_sheet_rows:,} of 1,000,000 data rows" in src.text
    assert f"| {settings.max_sheet_rows} |" in src.text
    assert f"| {settings.max_sheet_rows + 1} |" not in src.text


def test_an_eml_message_reads_headers_and_body():
    msg = EmailMessage()
    msg["From"] = "Ana <ana@example.org>"
    msg["To"] = "ops@example.org"
    msg["Subject"] = "Failover drill on Thursday"
    msg.set_content("The failover drill moves to Thursday 14:00; Bo runs it.")
    msg.add_attachment(b"%PDF-1.4", maintype="application", subtype="pdf", filename="plan.pdf")
    doc = convert_document(msg.as_bytes(), "drill.eml")
    assert doc.title == "Failover drill on Thursday"
    assert "**From:** Ana <ana@example.org>" in doc.text
    assert "Thursday 14:00; Bo runs it" in doc.text
    assert "plan.pdf" in doc.text


@needs_shared_data("documents")
def test_a_truncated_pdf_is_refused_as_corrupt():
    data = (DATA / "REPAIR-2022-INV-001_multipage.pdf").read_bytes()
    with pytest.raises(DocumentError) as info:
        convert_document(data[: len(data) // 3], "cut.pdf")
    assert info.value.cause == "corrupt" and "corrupt or truncated" in str(info.value)


@needs_shared_data("documents")
def test_conversion_never_touches_the_network(monkeypatch):
    """No converter calls a service or downloads a model: every socket use fails here."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"network use during conversion: {args[:2]}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    converted = 0
    for path in sorted(DATA.iterdir()):
        if path.suffix in (".txt", ".zip", ".bin"):
            continue
        try:
            convert_document(path.read_bytes(), path.name)
            converted += 1
        except DocumentError as exc:
            assert exc.cause in ("encrypted", "no_text")
    assert converted >= 18


@needs_shared_data("documents")
def test_damaged_files_of_every_type_are_refused_as_documents_and_print_nothing(capfd):
    """Truncated and bit-flipped copies of each test file: converted, or refused with a
    DocumentError; never another exception (which would end the run), never a word on
    stdout (which carries `compile --json`)."""
    import random

    rnd = random.Random(16)
    refused = 0
    for path in sorted(DATA.iterdir()):
        if path.suffix in (".txt", ".bin", ".zip") or path.name.startswith("GeoTopo"):
            continue
        data = path.read_bytes()
        for k in range(6):
            broken = bytearray(data[: len(data) * (k + 1) // 8] if k < 3 else data)
            if k >= 3:
                for _ in range(12):
                    broken[rnd.randrange(len(broken))] = rnd.randrange(256)
            try:
                convert_document(bytes(broken), path.name)
            except DocumentError:
                refused += 1
    assert refused > 40
    assert capfd.readouterr().out == ""


@needs_shared_data("documents")
def test_a_document_is_held_to_max_document_bytes_and_its_text_to_max_source_bytes(
    kb, settings, fake_llm, tmp_path
):
    """The thesis is 1.8 MB of PDF and 145 kB of text: a document's bytes and its text
    have limits of their own, each named in the error, and the rest of the run compiles."""
    (tmp_path / "note.md").write_text(NOTE, encoding="utf-8")
    thesis = DATA / "GeoTopo-komprimiert.pdf"
    small_file = dataclasses.replace(settings, max_document_bytes=1_000_000)
    result = run_compile(kb, small_file, fake_llm, thesis, tmp_path / "note.md")
    assert "over the 5,000,000-byte limit" not in result.failed[0].error
    assert "1,000,000-byte limit" in result.failed[0].error
    assert "max_document_bytes" in result.failed[0].error
    assert [Path(p).name for p in result.compiled] == ["note.md"]

    # its bytes are within max_document_bytes, its text over max_source_bytes
    short_text = dataclasses.replace(settings, max_source_bytes=100_000)
    result = run_compile(kb, short_text, fake_llm, thesis)
    assert result.failed, result.as_dict()
    error = result.failed[0].error
    assert "bytes of text once converted" in error and "max_source_bytes" in error
    assert not result.compiled
    assert not any("Geo" in p.name for p in (kb.root / "raw").glob("*.md"))
