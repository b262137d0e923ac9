"""A conversion that never ends (or takes its process down) fails that document with a
clear error, and the rest of the run compiles: conversions run in a process of their
own, killed past convert_timeout."""

import asyncio
import dataclasses
import shutil
from pathlib import Path

import pytest

from compiler import Compiler
from compiler.documents import ConverterCrashError, ConvertProcess, isolation
from kb_ai.errors import DocumentError
from tests.conftest import needs_shared_data, shared_data
from tests.fakes.stand_in_converters import misbehaving_convert

DATA = shared_data("documents")
pytestmark = needs_shared_data("documents")
INVOICE = DATA / "REPAIR-2022-INV-001_multipage.pdf"


def test_a_slow_conversion_fails_its_document_and_the_run_goes_on(
    kb, settings, fake_llm, tmp_path, monkeypatch
):
    monkeypatch.setattr(isolation, "convert_document", misbehaving_convert)
    for name in ("slow-report.pdf", "crash-scan.pdf", "invoice.pdf"):
        shutil.copy(INVOICE, tmp_path / name)
    (tmp_path / "note.md").write_text("# Backups\n\nBackups run nightly at 02:00.\n")
    quick = dataclasses.replace(settings, convert_timeout=5.0)
    compiler = Compiler(kb, quick, llm_factory=lambda s, **k: fake_llm)
    paths = [str(tmp_path / n) for n in ("slow-report.pdf", "crash-scan.pdf", "invoice.pdf",
                                         "note.md")]  # fmt: skip
    result = asyncio.run(compiler.compile_paths(paths))

    errors = {Path(f.source).name: f.error for f in result.failed}
    assert (
        "took longer than 5 s; raise convert_timeout or split the file" in errors["slow-report.pdf"]
    )
    assert "converter stopped while reading it" in errors["crash-scan.pdf"]
    assert sorted(Path(p).name for p in result.compiled) == ["invoice.pdf", "note.md"]
    assert result.commit


def test_the_converter_process_is_gone_after_a_timeout_and_the_next_file_converts():
    with ConvertProcess(2.0, target=misbehaving_convert) as converter:
        converter.start()
        pid = converter.pid
        with pytest.raises(DocumentError) as caught:
            converter.convert(INVOICE.read_bytes(), "slow.pdf")
        assert caught.value.cause == "timeout"
        # killed, although it ignores SIGTERM: no converter process is left behind
        assert not Path(f"/proc/{pid}").exists()
        doc = converter.convert(INVOICE.read_bytes(), "invoice.pdf")
        assert doc.units == 3
        with pytest.raises(DocumentError, match="password-protected"):
            converter.convert((DATA / "libreoffice-writer-password.pdf").read_bytes(), "x.pdf")


def test_a_converter_bug_is_raised_with_its_traceback_and_the_next_file_converts():
    # not a damaged file: the caller gets the converter's own error, traceback and all;
    # the process it happened in is not used again
    with ConvertProcess(20.0, target=misbehaving_convert) as converter:
        converter.start()
        pid = converter.pid
        with pytest.raises(ConverterCrashError) as caught:
            converter.convert(INVOICE.read_bytes(), "bug-report.pdf")
        assert "converting bug-report.pdf failed" in str(caught.value)
        assert "ValueError: a stand-in bug converting bug-report.pdf" in str(caught.value)
        assert "stand_in_converters.py" in str(caught.value)  # where it was raised
        assert not Path(f"/proc/{pid}").exists()
        assert converter.convert(INVOICE.read_bytes(), "invoice.pdf").units == 3
