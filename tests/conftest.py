"""What every test shares: a clean environment, the stand-in model, a fresh knowledge
base, and the shared test data (``../shared/data`` beside the repository, never copied
into it): a test that reads it asks for it with ``shared_data`` and is skipped, with the
folder named, on a clone that does not have it."""

import os
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
# CI has the shared data: there a missing folder fails the tests that need it instead of
# skipping them, so a moved folder cannot quietly turn them off (.ci/run sets it).
REQUIRE_SHARED_DATA = os.environ.get("KB_AI_TESTS_REQUIRE_SHARED_DATA") == "1"


def shared_data(*parts: str) -> Path:
    """``../shared/data/<parts>``, where the tests' real documents, transcripts and data
    sets live (it may be absent: see ``needs_shared_data``)."""
    return SHARED_DATA.joinpath(*parts)


def absent_reason(path: Path) -> str:
    """The skip reason of a test whose shared data ``path`` is not on this machine."""
    return (
        f"{path} is not here: the shared test data (../shared/data beside the "
        "repository) is not on this machine"
    )


def needs_shared_data(*parts: str) -> pytest.MarkDecorator:
    """Mark a test (or ``pytestmark`` a module) that reads ``../shared/data/<parts>``:
    skipped with the folder named when it is absent."""
    path = shared_data(*parts)
    skip = not path.exists() and not REQUIRE_SHARED_DATA
    return pytest.mark.skipif(skip, reason=absent_reason(path))


def skip_without_shared_data(path: Path) -> None:
    """Inside a test: skip it, naming ``path``, when that shared data is absent (fail it
    where the shared data is required)."""
    if path.exists():
        return
    if REQUIRE_SHARED_DATA:
        pytest.fail(f"{path} is missing and the shared test data is required here")
    pytest.skip(absent_reason(path))


def shared_files(folder: Path, pattern: str = "*") -> list[Path]:
    """The files of a shared-data folder matching ``pattern``, sorted; none when it is
    absent (a parameter list built from them at import then stays empty, and the tests
    it parametrizes are marked with ``needs_shared_data``)."""
    if not folder.is_dir() and REQUIRE_SHARED_DATA:
        raise FileNotFoundError(f"{folder}: the shared test data is required here")
    return sorted(p for p in folder.glob(pattern) if p.is_file()) if folder.is_dir() else []


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch, tmp_path_factory):
    """Tests never see the developer's kb-ai settings, model keys or git identity."""
    for name in list(os.environ):
        if name.startswith(("KB_AI_", "OPENAI_", "ANTHROPIC_", "GEMINI_", "OLLAMA_")):
            monkeypatch.delenv(name, raising=False)
    # No model found behind a test's back (a key, an Ollama server, the embedded model):
    # tests of detection turn it on themselves.
    monkeypatch.setenv("KB_AI_DETECT_MODEL", "0")
    # The coverage judge (retrieval/judge.py) is one more model call per question, between
    # the evidence check and the answer: tests that script the model's replies in stage
    # order would get theirs shifted. Tests of the judge turn it on themselves.
    monkeypatch.setenv("KB_AI_COVERAGE_JUDGE", "off")
    # The fakes listen on loopback: a proxy the machine uses for the outside world (CI's
    # package registries) must not carry the tests' own requests.
    for name in ("NO_PROXY", "no_proxy"):
        kept = os.environ.get(name, "")
        monkeypatch.setenv(name, ",".join(filter(None, [kept, "127.0.0.1", "localhost"])))
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    for name in (
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
    ):
        monkeypatch.delenv(name, raising=False)


def serve_model(monkeypatch, responder):
    """A model server (real HTTP, OpenAI wire format) answering with ``responder``, with
    the KB_AI_* environment pointing at it, for as long as the generator runs."""
    from tests.fakes.openai_server import FakeOpenAIServer

    with FakeOpenAIServer(responder) as server:
        monkeypatch.setenv("KB_AI_MODEL", "openai/fake-model")
        monkeypatch.setenv("KB_AI_API_BASE", server.base_url)
        monkeypatch.setenv("KB_AI_API_KEY", "sk-test")
        monkeypatch.setenv("KB_AI_RETRY_BACKOFF", "0.01")
        yield server


@pytest.fixture
def fake_model(monkeypatch):
    """The stand-in model server answering every kb-ai stage from its prompt."""
    from tests.fakes.kb_responder import respond

    yield from serve_model(monkeypatch, respond)


@pytest.fixture
def kb(tmp_path):
    """A fresh, empty knowledge base."""
    from wiki import KnowledgeBase

    return KnowledgeBase.init(tmp_path / "kb")


@pytest.fixture
def settings(kb):
    """Settings for ``kb`` with a model name, and nothing from the environment (the
    coverage judge off, as in clean_environment)."""
    from kb_ai.settings import load_settings

    return load_settings(kb.root, {"model": "fake/model", "coverage_judge": "off"}, environ={})


def compile_notes(kb, notes: dict[str, str], tmp_path) -> None:
    """Write ``notes`` (file name -> text) and compile them with the real CLI; the model
    is whatever the environment names (usually the ``fake_model`` fixture)."""
    from click.testing import CliRunner

    from kb_ai.cli import main

    folder = tmp_path / "notes"
    folder.mkdir(exist_ok=True)
    for name, text in notes.items():
        (folder / name).write_text(text, encoding="utf-8")
    result = CliRunner().invoke(main, ["--kb", str(kb.root), "compile", str(folder)])
    assert result.exit_code == 0, result.output
