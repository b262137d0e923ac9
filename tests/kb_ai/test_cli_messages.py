"""What the CLI prints besides its results: the small-model notice only where the model
is used and once in all, no "Next:" hint for scripts, and a settings listing that the
kb-ai.toml header can point to."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from kb_ai.cli import main
from wiki.layout import CONFIG_HEADER

NOTICE = "Using the small embedded model"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cli(tmp_path, monkeypatch):
    monkeypatch.delenv("KB_AI_NOTICE_SHOWN", raising=False)
    kb = tmp_path / "kb"

    def run(*args, model="local/default", env=None):
        argv = ["--kb", str(kb), *(["--model", model] if model else []), *args]
        return CliRunner().invoke(main, argv, env=env)

    run("init")
    return run


def test_an_empty_question_is_refused_before_any_notice_about_the_model(cli):
    result = cli("ask", "  ")
    assert result.exit_code == 2
    assert "The question is empty" in result.stderr
    assert NOTICE not in result.output


def test_commands_that_do_not_use_the_model_say_nothing_about_it(cli):
    for args in (("status",), ("settings",), ("init",)):
        result = cli(*args)
        assert result.exit_code == 0, result.output
        assert NOTICE not in result.output, args


def test_the_notice_is_printed_once_by_a_command_that_uses_the_model(cli, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = cli("compile", str(empty))
    assert result.stderr.count(NOTICE) == 1


def test_a_script_that_has_shown_the_notice_silences_it_for_the_commands_after(cli):
    shown = cli("doctor", "--no-call")
    assert shown.stderr.count(NOTICE) == 1
    after = cli("doctor", "--no-call", env={"KB_AI_NOTICE_SHOWN": "1"})
    assert after.exit_code == 0 and NOTICE not in after.output
    assert "model      local/default" in after.output


def test_a_larger_model_gets_no_notice(cli):
    env = {"KB_AI_API_BASE": "http://127.0.0.1:9/v1", "KB_AI_TRANSPORT": "http"}
    result = cli("doctor", "--no-call", model="openai/qwen2.5-32b", env=env)
    assert result.exit_code == 0 and "model      openai/qwen2.5-32b" in result.output
    assert NOTICE not in result.output


def test_init_for_a_script_does_not_tell_it_what_to_run_next(tmp_path):
    kb = tmp_path / "kb"
    told = CliRunner().invoke(main, ["--kb", str(kb), "init"])
    assert "Next: kb-ai" in told.output
    quiet = CliRunner().invoke(main, ["--kb", str(tmp_path / "kb2"), "init", "--no-hint"])
    assert quiet.exit_code == 0 and "Knowledge base ready" in quiet.output
    assert "Next:" not in quiet.output


def test_the_settings_the_kb_file_points_to_are_listed_with_their_values_here(tmp_path):
    kb = tmp_path / "kb"
    assert CliRunner().invoke(main, ["--kb", str(kb), "init"]).exit_code == 0
    assert "`kb-ai settings`" in CONFIG_HEADER
    (kb / "kb-ai.toml").write_text(CONFIG_HEADER + "select_k = 3\n", encoding="utf-8")
    env = {"KB_AI_API_KEY": "sk-do-not-print", "KB_AI_READ_CHARS": "9000"}
    listed = CliRunner().invoke(main, ["--kb", str(kb), "settings"], env=env)
    assert listed.exit_code == 0, listed.output
    assert "select_k = 3" in listed.output and "read_chars = 9000" in listed.output
    assert "Characters of each page read to answer" in listed.output
    assert "sk-do-not-print" not in listed.output
    as_json = json.loads(
        CliRunner().invoke(main, ["--kb", str(kb), "settings", "--json"], env=env).output
    )
    assert as_json["select_k"] == 3 and as_json["api_key"] == "(set)"


def test_the_package_declares_its_licence_the_way_current_setuptools_expects():
    """A table-form `project.license` makes setuptools print a deprecation warning on
    every install; an SPDX string needs setuptools 77 or newer to build."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["license"] == "MIT"
    floor = next(r for r in project["build-system"]["requires"] if r.startswith("setuptools"))
    assert int(floor.split(">=")[1].split(".")[0]) >= 77
