import pytest


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch, tmp_path_factory):
    """Tests never see the developer's kb-ai settings, model keys or git identity."""
    import os

    for name in list(os.environ):
        if name.startswith(("KB_AI_", "OPENAI_", "ANTHROPIC_", "GEMINI_", "OLLAMA_")):
            monkeypatch.delenv(name, raising=False)
    # No model found behind a test's back (a key, an Ollama server, the embedded model):
    # tests of detection turn it on themselves.
    monkeypatch.setenv("KB_AI_DETECT_MODEL", "0")
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


@pytest.fixture
def fake_model(monkeypatch):
    """The stand-in model server (real HTTP, OpenAI wire format) answering every kb-ai
    stage from its prompt, with the KB_AI_* environment pointing at it."""
    from tests.fakes.kb_responder import respond
    from tests.fakes.openai_server import FakeOpenAIServer

    with FakeOpenAIServer(respond) as server:
        monkeypatch.setenv("KB_AI_MODEL", "openai/fake-model")
        monkeypatch.setenv("KB_AI_API_BASE", server.base_url)
        monkeypatch.setenv("KB_AI_API_KEY", "sk-test")
        monkeypatch.setenv("KB_AI_RETRY_BACKOFF", "0.01")
        yield server


@pytest.fixture
def kb(tmp_path):
    """A fresh, empty knowledge base."""
    from wiki import KnowledgeBase

    return KnowledgeBase.init(tmp_path / "kb")


@pytest.fixture
def settings(kb):
    """Settings for ``kb`` with a model name, and nothing from the environment."""
    from kb_ai.settings import load_settings

    return load_settings(kb.root, {"model": "fake/model"}, environ={})


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
