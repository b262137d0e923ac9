"""The CLI on a broken state.db: one line saying what failed, where and what to do, exit
status 1, never a Python traceback; and a state.db that was lost is reported by
`kb-ai status`, its sources known again."""

import json

import pytest
from click.testing import CliRunner

from kb_ai.cli import main
from tests.conftest import compile_notes
from tests.fakes.storage_faults import corrupt, read_only
from wiki import KnowledgeBase

NOTES = {
    "backups.md": "# Nightly backups\n\nBackups of the main database run nightly at 02:00. "
    "Backup copies are kept for thirty days in a separate account.\n",
}


@pytest.fixture
def kb(tmp_path, fake_model):
    kb = KnowledgeBase.init(tmp_path / "kb")
    compile_notes(kb, NOTES, tmp_path)
    return kb


def cli(kb, *args):
    return CliRunner().invoke(main, ["--kb", str(kb.root), *args])


def one_line_error(result):
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), result.exception  # handled, not raised
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize(
    "args",
    [
        ("status",),
        ("compile", "NOTES"),
        ("ask", "How long are backups kept?"),
        ("lint",),
    ],
)
def test_a_corrupted_state_db_is_one_line_that_says_what_to_do(kb, tmp_path, args):
    corrupt(kb.state_db)
    args = tuple(str(tmp_path / "notes") if a == "NOTES" else a for a in args)
    line = one_line_error(cli(kb, *args))
    assert line.startswith("Error: Could not")
    assert str(kb.state_db) in line
    assert "corrupted" in line and "move" in line and "aside" in line


def test_a_state_folder_nobody_may_write_is_one_line(kb, tmp_path):
    (tmp_path / "notes" / "dns.md").write_text("# DNS\n\nDNS moved to Terraform.\n")
    with read_only(kb.state_dir):
        line = one_line_error(cli(kb, "compile", str(tmp_path / "notes")))
    assert "Error: " in line and "writable" in line


def test_status_reports_a_state_db_that_was_lost_and_rebuilt(kb):
    kb.state_db.unlink()
    result = cli(kb, "status")
    assert result.exit_code == 0, result.output
    assert "state.db  missing, made again" in result.output
    assert "rebuilt 1 sources" in result.output and "chat sessions" in result.output
    assert "1 compiled" in result.output  # the source is known again, not lost
    report = json.loads(cli(kb, "status", "--json").output)
    assert report["state_lost"]["rebuilt"]["sources"] == 1
    assert report["sources"]["ok"] == 1


def test_a_compile_after_a_lost_state_db_makes_no_model_call_for_what_is_unchanged(
    kb, tmp_path, fake_model
):
    kb.state_db.unlink()
    before = len(fake_model.requests)
    result = cli(kb, "compile", str(tmp_path / "notes"))
    assert result.exit_code == 0, result.output
    assert "1 unchanged" in result.output
    assert len(fake_model.requests) == before
