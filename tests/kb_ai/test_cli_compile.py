"""`kb-ai compile` end to end: the CLI, litellm and a fake model server over real HTTP."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from kb_ai.cli import main
from tests.conftest import needs_shared_data, shared_data
from tests.fakes.kb_responder import respond, stage_of
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from wiki import git, list_articles

ADR = shared_data("adr_govuk")


@pytest.fixture
def model_env(fake_model, monkeypatch):
    # Compile end to end through litellm, as users of hosted providers do (an
    # OpenAI-compatible server alone would be spoken to over plain HTTP).
    monkeypatch.setenv("KB_AI_TRANSPORT", "litellm")
    return fake_model


def run(kb, *args):
    result = CliRunner().invoke(main, ["--kb", str(kb.root), *args], catch_exceptions=False)
    return result


def note(tmp_path, name, text):
    d = tmp_path / "notes"
    d.mkdir(exist_ok=True)
    (d / name).write_text(text, encoding="utf-8")
    return d / name


@needs_shared_data("adr_govuk")
def test_compiles_the_real_decision_records_and_a_rerun_costs_nothing(kb, model_env):
    result = run(kb, "compile", str(ADR), "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert set(summary) >= {
        "sources",
        "compiled",
        "skipped",
        "failed",
        "created",
        "updated",
        "commit",
        "usage",
    }
    docs = len(list(ADR.glob("*.md")))
    assert summary["failed"] == [] and len(summary["compiled"]) == summary["sources"] >= docs
    assert len(summary["created"]) >= docs - 2  # near-identical titles may merge
    assert summary["usage"]["calls"] <= 3 * summary["sources"]
    assert summary["usage"]["prompt_tokens"] > 0
    assert git(kb, "log", "-1", "--format=%h").strip() == summary["commit"]
    articles = list_articles(kb)
    assert len(articles) == len(summary["created"])
    index = kb.master_index_path.read_text()
    assert index.count("\n- [") == len(articles)
    assert "puppet" in kb.topics_path.read_text()

    requests_before = len(model_env.requests)
    again = json.loads(run(kb, "compile", str(ADR), "--json").output)
    assert again["usage"]["calls"] == 0 and len(again["skipped"]) == summary["sources"]
    assert again["commit"] is None
    assert len(model_env.requests) == requests_before


def test_human_summary_lists_articles_and_commit(kb, model_env, tmp_path):
    src = note(
        tmp_path,
        "dns.md",
        "# DNS out of puppet\n\nWe decided to move DNS records into Terraform.\n",
    )
    result = run(kb, "compile", str(src))
    assert result.exit_code == 0, result.output
    assert "Compiled 1 of 1 source(s)" in result.output
    assert "created  wiki/decision/dns-out-of-puppet.md" in result.output
    assert "Commit " in result.output and "3 model call(s)" in result.output


def test_some_failed_sources_exit_1_and_the_rest_is_committed(kb, model_env, tmp_path):
    good = note(tmp_path, "good.md", "# Release train\n\nReleases leave every Tuesday at 10:00.\n")
    (good.parent / "bad.md").write_bytes(b"\x00\x01\x02binary")
    result = run(kb, "compile", str(good.parent), str(tmp_path / "nope.md"), "--json")
    assert result.exit_code == 1
    summary = json.loads(result.output)
    reasons = sorted(f["error"] for f in summary["failed"])
    assert any("binary" in r for r in reasons) and any("no such file" in r for r in reasons)
    assert summary["created"] == ["wiki/concept/release-train.md"]
    assert git(kb, "status", "--porcelain").strip() == ""


def test_not_a_knowledge_base_is_a_usage_error(tmp_path, model_env):
    (tmp_path / "plain").mkdir()
    result = CliRunner().invoke(main, ["--kb", str(tmp_path / "plain"), "compile", str(tmp_path)])
    assert result.exit_code == 2
    assert "not a kb-ai knowledge base" in result.output and "kb-ai init" in result.output


def test_no_model_configured_says_how_to_set_one(kb, tmp_path):
    src = note(tmp_path, "a.md", "# A\n\nSomething worth keeping for later.\n")
    result = run(kb, "compile", str(src))
    assert result.exit_code == 2
    assert "No model configured" in result.output and "KB_AI_MODEL" in result.output


def test_an_api_base_that_is_not_a_url_is_refused_before_any_work(kb, tmp_path, monkeypatch):
    src = note(tmp_path, "a.md", "# A\n\nSomething worth keeping for later.\n")
    monkeypatch.setenv("KB_AI_MODEL", "openai/qwen")
    monkeypatch.setenv("KB_AI_API_BASE", "localhost:8000")  # the scheme forgotten
    result = run(kb, "compile", str(src))
    assert result.exit_code == 2
    assert "api_base 'localhost:8000' is not an http(s) URL" in result.output
    assert "http://localhost:8000/v1" in result.output
    assert not list((kb.root / "raw").glob("*.md"))  # nothing was read or written


def test_a_model_that_times_out_fails_the_source_and_the_next_run_retries(
    kb, model_env, tmp_path, monkeypatch
):
    monkeypatch.setenv("KB_AI_TIMEOUT_EXTRACT", "0.3")
    monkeypatch.setenv("KB_AI_MAX_RETRIES", "1")
    src = note(
        tmp_path, "a.md", "# Backups\n\nBackups run nightly at 02:00 and are kept 30 days.\n"
    )
    model_env.queue(Reply(delay=2.0), Reply(delay=2.0))
    result = run(kb, "compile", str(src), "--json")
    assert result.exit_code == 1
    failure = json.loads(result.output)["failed"][0]
    assert "0.3" in failure["error"] or "time" in failure["error"].lower()
    assert list_articles(kb) == []

    result = run(kb, "compile", str(src), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["created"] == ["wiki/concept/backups.md"]


def test_invalid_json_from_the_model_is_reported_not_written(kb, model_env, tmp_path):
    src = note(tmp_path, "a.md", "# Backups\n\nBackups run nightly at 02:00.\n")
    model_env.queue(Reply('{"title": "Backups", "summary": "cut'))  # never closed
    result = run(kb, "compile", str(src), "--json")
    assert result.exit_code == 1
    assert json.loads(result.output)["failed"][0]["error"]
    assert list_articles(kb) == []


def test_a_dead_endpoint_fails_the_run_fast_with_one_clear_message(kb, tmp_path, monkeypatch):
    for i in range(12):
        note(tmp_path, f"n{i}.md", f"# Note {i}\n\nSome fact number {i} worth keeping.\n")
    monkeypatch.setenv("KB_AI_MODEL", "openai/fake-model")
    monkeypatch.setenv("KB_AI_API_BASE", "http://127.0.0.1:9/v1")  # nothing listens on port 9
    monkeypatch.setenv("KB_AI_RETRY_BACKOFF", "0.01")
    monkeypatch.setenv("KB_AI_MAX_RETRIES", "1")
    monkeypatch.setenv("KB_AI_MAX_CONCURRENCY", "1")
    result = run(kb, "compile", str(tmp_path / "notes"), "--json")
    assert result.exit_code == 1
    errors = [f["error"] for f in json.loads(result.output)["failed"]]
    assert len(errors) == 12
    assert (
        sum("in a row" in e for e in errors) >= 6
    )  # the breaker opened and later sources failed fast


def test_ctrl_c_stops_cleanly_and_commits_what_finished(kb, tmp_path):
    for i in range(6):
        note(tmp_path, f"n{i}.md", f"# Subject {i}\n\nA fact about subject {i} worth keeping.\n")

    def slow_writes(request):
        reply = respond(request)
        if stage_of(request) == "write":
            return Reply(reply.content, delay=0.6)
        return reply

    with FakeOpenAIServer(slow_writes) as server:
        env = {
            **os.environ,
            "KB_AI_MODEL": "openai/fake-model",
            "KB_AI_API_BASE": server.base_url,
            "KB_AI_API_KEY": "sk-test",
            "KB_AI_MAX_CONCURRENCY": "1",
        }
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kb_ai",
                "--kb",
                str(kb.root),
                "compile",
                str(tmp_path / "notes"),
                "--json",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while not list(kb.wiki_dir.rglob("*.md")) and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    summary = json.loads(out)
    assert summary["interrupted"] and 1 <= len(summary["created"]) < 6
    assert sorted(list_articles(kb)) == sorted(summary["created"])
    assert git(kb, "status", "--porcelain").strip() == ""
    assert git(kb, "log", "-1", "--format=%h").strip() == summary["commit"]


def test_a_compile_into_a_log_says_each_stage_and_each_source_as_it_finishes(
    kb, model_env, tmp_path
):
    note(tmp_path, "a.md", "# Backups\n\nBackups run nightly at 02:00.\n")
    note(tmp_path, "b.md", "# Retries\n\nA failed job is retried 5 times.\n")
    result = run(kb, "compile", str(tmp_path / "notes"))  # stderr is not a terminal here
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert "extract: 2" in lines
    finished = [line for line in lines if line.startswith("extract ")]
    assert len(finished) == 2 and finished[1].startswith("extract 2/2 ")
    assert {finished[0].split()[-1], finished[1].split()[-1]} == {
        str(tmp_path / "notes" / "a.md"),
        str(tmp_path / "notes" / "b.md"),
    }
    assert any(line.startswith("write 1/") for line in lines)
    stages = [line.split(":")[0] for line in lines if line.split(":")[0] in ("index", "commit")]
    assert stages == ["index", "commit"], lines
    assert "\r" not in result.stderr  # no bar redrawn into a file
