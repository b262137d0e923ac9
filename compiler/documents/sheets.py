"""Spreadsheets and CSV as Markdown tables: one table per sheet, each after a sheet marker
and a heading. Rows are streamed and capped (a million-row sheet costs its first rows,
not its size), and what was cut is said in the text itself."""

from __future__ import annotations

import csv
import io
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from xml.etree.ElementTree import ParseError

from compiler.documents.document import Document, has_text
from compiler.documents.markers import sheet_marker
from kb_ai.errors import DocumentError

MAX_COLUMNS = 50
MAX_CELL_CHARS = 200
DETECT_BYTES = 64_000


@dataclass(frozen=True)
class Table:
    name: str
    rows: list[list[str]]
    total_rows: int | None  # as the file declares it, when it does (None: unknown)
    cut: bool


def convert_sheet(data: bytes, name: str, fmt: str, *, max_rows: int) -> Document:
    if fmt == "csv":
        tables = [_csv_table(data, name, max_rows)]
    elif fmt == "xls":
        tables = _xls_tables(data, name, max_rows)
    else:
        tables = _xlsx_tables(data, name, max_rows)
    parts, notes = [], []
    for t in tables:
        if not t.rows:
            continue
        if fmt != "csv":
            parts += [sheet_marker(t.name), f"## {t.name}"]
        parts.append(markdown_table(t.rows))
        if t.cut:
            total = f" of {t.total_rows:,}" if t.total_rows else ""
            note = (
                f"[kb-ai kept the first {len(t.rows) - 1:,}{total} data rows of "
                f"{'this file' if fmt == 'csv' else 'sheet ' + t.name}; the rest was cut "
                f"(max_sheet_rows = {max_rows:,})]"
            )
            parts.append(note)
            notes.append(note)
    text = "\n\n".join(parts)
    if not has_text(text):
        raise DocumentError(f"{name}: the spreadsheet is empty", cause="no_text")
    return Document(text=text, format=fmt, units=len(tables), notes=notes)


def markdown_table(rows: list[list[str]]) -> str:
    width = max(len(r) for r in rows)
    lines = []
    for i, row in enumerate(rows):
        cells = [*row, *[""] * (width - len(row))]
        lines.append("| " + " | ".join(cells) + " |")
        if i == 0:
            lines.append("|" + " --- |" * width)
    return "\n".join(lines)


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = " ".join(str(value).split()).replace("|", "\\|")
    return text[:MAX_CELL_CHARS]


def _take(rows: Iterable[Iterable[object]], max_rows: int) -> tuple[list[list[str]], bool]:
    """The first ``max_rows`` data rows (plus the header), trailing empty cells trimmed."""
    out: list[list[str]] = []
    it: Iterator[Iterable[object]] = iter(rows)
    for row in it:
        cells = [_cell(v) for v in list(row)[:MAX_COLUMNS]]
        while cells and not cells[-1]:
            cells.pop()
        if not cells:
            continue
        if len(out) > max_rows:
            return out, True
        out.append(cells)
    return out, False


def _xlsx_tables(data: bytes, name: str, max_rows: int) -> list[Table]:
    import openpyxl

    try:
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, ParseError, TypeError) as exc:
        raise _corrupt(name, "Excel workbook", exc) from exc
    try:
        tables = []
        for sheet in book.worksheets:
            rows, cut = _take(sheet.iter_rows(values_only=True), max_rows)
            declared = sheet.max_row - 1 if isinstance(sheet.max_row, int) else None
            tables.append(Table(sheet.title, rows, declared, cut))
        return tables
    except (zipfile.BadZipFile, KeyError, ValueError, ParseError, EOFError) as exc:
        raise _corrupt(name, "Excel workbook", exc) from exc
    finally:
        book.close()


def _xls_tables(data: bytes, name: str, max_rows: int) -> list[Table]:
    import xlrd

    try:
        # xlrd writes its warnings to stdout, which carries `compile --json`'s report
        book = xlrd.open_workbook(file_contents=data, on_demand=True, logfile=io.StringIO())
    except (xlrd.XLRDError, ValueError, KeyError, IndexError, EOFError, AssertionError) as exc:
        raise _corrupt(name, "Excel 97-2003 workbook", exc) from exc
    try:
        tables = []
        for index in range(book.nsheets):
            sheet = book.sheet_by_index(index)
            limit = min(sheet.nrows, max_rows + 2)
            rows, cut = _take((sheet.row_values(r) for r in range(limit)), max_rows)
            tables.append(Table(sheet.name, rows, sheet.nrows - 1, cut or sheet.nrows > limit))
        return tables
    finally:
        book.release_resources()


def decode_any(data: bytes, name: str) -> str:
    """Text in whatever encoding it came in (UTF-8 first, then detected: Shift-JIS, ...)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(data[:DETECT_BYTES]).best()
    if best is None or not best.encoding:
        raise DocumentError(
            f"{name}: cannot tell the text encoding", cause="corrupt", hint="save it as UTF-8"
        )
    return data.decode(best.encoding, errors="replace")


def _csv_table(data: bytes, name: str, max_rows: int) -> Table:
    text = decode_any(data, name)
    if "\x00" in text[:8192]:
        raise DocumentError(f"{name}: binary data, not CSV", cause="corrupt")
    delimiter = "\t" if name.lower().endswith(".tsv") else _delimiter(text[:8192])
    rows, cut = _take(csv.reader(io.StringIO(text), delimiter=delimiter), max_rows)
    total = text.count("\n") if cut else None
    return Table(name, rows, total, cut)


def _delimiter(sample: str) -> str:
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        return ","


def _corrupt(name: str, label: str, exc: BaseException) -> DocumentError:
    reason = (str(exc).splitlines() or [""])[0][:120] or type(exc).__name__
    return DocumentError(
        f"{name}: not a readable {label} (corrupt or truncated: {reason})",
        cause="corrupt",
        hint="open it in its application and save it again",
    )
