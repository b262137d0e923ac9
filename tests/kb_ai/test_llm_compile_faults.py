"""`kb-ai compile` against a model that misbehaves on purpose (tests/fakes/faulty_server),
end to end over real HTTP: a refused reply is not replayed by the next run, huge replies
never reach the wiki or a later prompt, a hanging endpoint fails the run within two
timeouts, and a seeded mix of faults leaves a clean knowledge base."""

import json

import pytest
from click.testing import CliRunner

from kb_ai.cli import main
from tests.fakes.faulty_server import MIX_MODES, FaultyModel, faulty_server
from wiki import git, list_articles

NOTE = (
    "# Backups\n\nBackups run nightly at 02:00 and are kept for 30 days. "
    "We decided to keep them in the second region. Restores were tested in March.\n"
)


@pytest.fixture
def notes(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    return folder


def write_notes(folder, count=1):
    for i in range(count):
        text = (
            NOTE if i == 0 else NOTE.replace("Backups", f"Subject{i}").replace("02:00", f"0{i}:30")
        )
        (folder / f"n{i}.md").write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def model(monkeypatch):
    """Point kb-ai at a faulty server; returns a function taking the FaultyModel."""
    servers = []

    def start(faulty: FaultyModel):
        server = faulty_server(faulty).start()
        servers.append(server)
        monkeypatch.setenv("KB_AI_MODEL", "openai/fake-model")
        monkeypatch.setenv("KB_AI_API_BASE", server.base_url)
        monkeypatch.setenv("KB_AI_API_KEY", "sk-test")
        monkeypatch.setenv("KB_AI_RETRY_BACKOFF", "0.01")
        return server

    yield start
    for server in servers:
        server.stop()


def compile_json(kb, *args):
    result = CliRunner().invoke(
        main, ["--kb", str(kb.root), "compile", *map(str, args), "--json"], catch_exceptions=False
    )
    return result.exit_code, json.loads(result.output)


def stages(server):
    from tests.fakes.kb_responder import stage_of

    return [stage_of(r) for r in server.requests]


# -- item 3: a refused reply is not replayed -----------------------------------------------


@pytest.mark.parametrize(
    "mode, stage, times, says",
    [
        ("escape", "classify", 1, "outside wiki/"),
        ("empty", "classify", 1, "named no article"),
        # a refused article is written again once with the findings: both must fail
        ("empty", "write", 2, "empty article"),
        ("empty", "extract", 1, "extracted nothing"),
    ],
)
def test_a_refused_reply_is_asked_again_by_the_next_run(kb, notes, model, mode, stage, times, says):
    server = model(FaultyModel(mode, stages={stage}, times=times))
    src = write_notes(notes) / "n0.md"
    code, first = compile_json(kb, src)
    assert code == 1 and says in first["failed"][0]["error"]
    assert list_articles(kb) == []
    asked = stages(server).count(stage)

    code, second = compile_json(kb, src, "--force")
    assert code == 0, second
    assert stages(server).count(stage) == asked + 1  # asked again, not replayed
    assert second["created"] == ["wiki/decision/backups.md"]


# -- item 4: huge replies are bounded --------------------------------------------------------


def test_a_5_mb_article_body_is_never_committed(kb, notes, model):
    server = model(FaultyModel("huge", stages={"write"}))
    code, summary = compile_json(kb, write_notes(notes) / "n0.md")
    assert code == 1
    error = summary["failed"][0]["error"]
    assert "write reply" in error and "200,000" in error
    assert list_articles(kb) == []
    tracked = git(kb, "ls-files").split()
    assert all((kb.root / path).stat().st_size < 100_000 for path in tracked)
    assert stages(server).count("write") == 1


@pytest.mark.parametrize("chars", [5_000_000, 5_000])
def test_a_huge_extraction_field_is_neither_stored_nor_sent_on(kb, notes, model, chars):
    server = model(FaultyModel("huge", stages={"extract"}, huge_chars=chars))
    code, summary = compile_json(kb, write_notes(notes) / "n0.md")
    assert code == 1 and "extract reply" in summary["failed"][0]["error"]
    assert not list(kb.extraction_dir.glob("*.md"))
    assert stages(server) == ["extract"]  # nothing went on to classify or write
    largest = max(len(json.dumps(r["messages"])) for r in server.requests)
    assert largest < 20_000


# -- item 7: a hanging endpoint ------------------------------------------------------------------


def test_a_hanging_endpoint_fails_the_run_after_two_timed_out_attempts(
    kb, notes, model, monkeypatch
):
    server = model(FaultyModel("hang"))
    monkeypatch.setenv("KB_AI_TIMEOUT_EXTRACT", "0.3")
    monkeypatch.setenv("KB_AI_MAX_CONCURRENCY", "1")
    code, summary = compile_json(kb, write_notes(notes, 3))
    assert code == 1
    errors = [f["error"] for f in summary["failed"]]
    assert len(errors) == 3
    # The call whose timeout opened the breaker says so; the others were refused.
    timed_out = [e for e in errors if "did not answer within 0.3 s (extract)" in e]
    refused = [e for e in errors if e.startswith("openai/fake-model at http://127.0.0.1:")]
    assert len(timed_out) == 3 and len(refused) == 2
    assert all("did not answer 2 times in a row" in e for e in refused)
    assert all("check that it is running" in e for e in refused)
    assert len(server.requests) == 2  # two timeouts, then nothing more was sent
    assert list_articles(kb) == []


def test_a_hanging_endpoint_with_calls_in_parallel_sends_at_most_one_retry(
    kb, notes, model, monkeypatch
):
    server = model(FaultyModel("hang"))
    monkeypatch.setenv("KB_AI_TIMEOUT_EXTRACT", "0.3")
    code, summary = compile_json(kb, write_notes(notes, 5))
    assert code == 1 and len(summary["failed"]) == 5
    # Each source's first attempt, and at most one retry before the second timeout
    # opened the breaker (which stopped the attempts still waiting).
    assert 5 <= len(server.requests) <= 6
    assert any("in a row" in f["error"] for f in summary["failed"])


# -- a seeded mix ---------------------------------------------------------------------------------


def test_a_seeded_mix_of_faults_leaves_a_clean_wiki_and_a_healthy_rerun_compiles(
    kb, notes, model, monkeypatch
):
    monkeypatch.setenv("KB_AI_MAX_RETRIES", "2")
    monkeypatch.setenv("KB_AI_BREAKER_THRESHOLD", "0")
    faulty = FaultyModel("mix", seed=3, mix_modes=[m for m in MIX_MODES if m != "429"])
    model(faulty)
    write_notes(notes, 6)
    code, summary = compile_json(kb, notes)
    assert code in (0, 1) and faulty.faults
    assert all(f["error"] for f in summary["failed"])
    assert git(kb, "status", "--porcelain").strip() == ""
    for path in list_articles(kb):
        assert (kb.root / path).stat().st_size < 100_000

    healthy = model(FaultyModel("ok"))
    code, rerun = compile_json(kb, notes)
    assert code == 0, rerun
    assert len(list_articles(kb)) == 6
    assert healthy.requests  # what failed was asked again
