"""Which model kb-ai picks when none is named: provider keys, then Ollama, then the
embedded model, then a clear error; and `kb-ai doctor` saying which and why."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from click.testing import CliRunner

from kb_ai import models
from kb_ai.cli import main
from kb_ai.errors import ConfigError
from kb_ai.llm import _local
from kb_ai.settings import load_settings


class FakeOllama:
    """A real HTTP server on loopback answering Ollama's GET /api/tags."""

    def __init__(self, tags: list[dict]) -> None:
        tags_body = json.dumps({"models": tags}).encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if self.path != "/api/tags":
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(tags_body)))
                self.end_headers()
                self.wfile.write(tags_body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeOllama:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def no_ollama():
    """OLLAMA_HOST pointing at a port where nothing listens."""
    return {"OLLAMA_HOST": f"127.0.0.1:{free_port()}"}


@pytest.fixture
def embedded(monkeypatch):
    """Whether the embedded model counts as installed, set by the test."""
    state = {"installed": False}
    monkeypatch.setattr(_local, "embedded_model_installed", lambda *a: state["installed"])
    return state


def settings_for(tmp_path, env, **overrides):
    return load_settings(tmp_path / "kb", overrides, env, detect=True)


def test_a_named_model_wins_over_everything_and_says_where_it_came_from(tmp_path, embedded):
    embedded["installed"] = True
    env = {"KB_AI_MODEL": "openai/gpt-4.1", "OPENAI_API_KEY": "sk-x"}
    s = settings_for(tmp_path, env)
    assert (s.model, s.model_source) == ("openai/gpt-4.1", "KB_AI_MODEL")
    s = settings_for(tmp_path, env, model="anthropic/claude-x")
    assert (s.model, s.model_source) == ("anthropic/claude-x", "--model")
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "kb-ai.toml").write_text('model = "ollama_chat/llama3.2"\n')
    s = settings_for(tmp_path, {"OPENAI_API_KEY": "sk-x"})
    assert s.model == "ollama_chat/llama3.2" and "kb-ai.toml" in s.model_source


def test_a_provider_key_comes_before_ollama_and_the_embedded_model(tmp_path, embedded):
    embedded["installed"] = True
    with FakeOllama([{"name": "qwen2.5:7b"}]) as ollama:
        env = {"ANTHROPIC_API_KEY": "sk-ant", "OLLAMA_HOST": ollama.base}
        s = settings_for(tmp_path, env)
        assert s.model.startswith("anthropic/") and s.model_source == "ANTHROPIC_API_KEY is set"
        s = settings_for(tmp_path, {**env, "OPENAI_API_KEY": "sk-x"})
        assert s.model == "openai/gpt-4o-mini"


def test_ollama_on_localhost_comes_before_the_embedded_model(tmp_path, embedded):
    embedded["installed"] = True
    tags = [
        {"name": "nomic-embed-text:latest", "details": {"family": "nomic-bert"}},
        {"name": "qwen2.5:7b", "details": {"family": "qwen2"}},
    ]
    with FakeOllama(tags) as ollama:
        s = settings_for(tmp_path, {"OLLAMA_HOST": ollama.base})
    assert s.model == "ollama_chat/qwen2.5:7b"
    assert "Ollama" in s.model_source and "qwen2.5:7b" in s.model_source


def test_an_ollama_server_with_no_chat_model_is_passed_over(tmp_path, embedded, no_ollama):
    embedded["installed"] = True
    with FakeOllama([{"name": "all-minilm:latest", "details": {"family": "bert"}}]) as ollama:
        s = settings_for(tmp_path, {"OLLAMA_HOST": ollama.base})
    assert s.model == "local/default"


def test_the_embedded_model_comes_last_with_smaller_prompts_and_one_call_at_a_time(
    tmp_path, embedded, no_ollama
):
    embedded["installed"] = True
    s = settings_for(tmp_path, no_ollama)
    assert s.model == "local/default" and "embedded" in s.model_source
    assert s.is_local and s.max_concurrency == 1
    assert s.selection_budget_tokens < 6_000 and s.read_chars < 16_000
    assert models.model_notice(s.model) and "KB_AI_MODEL" in models.model_notice(s.model)
    # what the user sets still wins over the local defaults
    s = settings_for(tmp_path, {**no_ollama, "KB_AI_READ_CHARS": "9000"})
    assert s.read_chars == 9000


def test_nothing_found_is_the_clear_error(tmp_path, embedded, no_ollama):
    s = settings_for(tmp_path, no_ollama)
    assert s.model is None
    with pytest.raises(ConfigError, match="No model configured") as err:
        s.require_model()
    assert "KB_AI_MODEL" in str(err.value) and "kb-ai[local]" in str(err.value)


def test_detection_can_be_turned_off(tmp_path, embedded, no_ollama):
    embedded["installed"] = True
    s = settings_for(tmp_path, {**no_ollama, "OPENAI_API_KEY": "sk-x", "KB_AI_DETECT_MODEL": "0"})
    assert s.model is None


def test_ollama_host_is_read_as_ollama_reads_it():
    assert models.ollama_base({}) == "http://127.0.0.1:11434"
    assert models.ollama_base({"OLLAMA_HOST": "0.0.0.0"}) == "http://0.0.0.0:11434"
    assert models.ollama_base({"OLLAMA_HOST": "http://box:9999/"}) == "http://box:9999"


def test_doctor_says_which_model_and_why_and_that_it_answers(tmp_path, monkeypatch):
    from tests.fakes.openai_server import FakeOpenAIServer, Reply

    with FakeOpenAIServer(lambda request: Reply('{"answer": "yes"}')) as server:
        monkeypatch.setenv("KB_AI_MODEL", "openai/fake-model")
        monkeypatch.setenv("KB_AI_API_BASE", server.base_url)
        monkeypatch.setenv("KB_AI_API_KEY", "sk-test")
        result = CliRunner().invoke(main, ["--kb", str(tmp_path / "kb"), "doctor"])
    assert result.exit_code == 0, result.output
    assert "openai/fake-model" in result.output and "KB_AI_MODEL" in result.output
    assert "answers    yes" in result.output


def test_doctor_says_when_the_model_does_not_answer(tmp_path, monkeypatch):
    monkeypatch.setenv("KB_AI_MODEL", "openai/nobody-home")
    monkeypatch.setenv("KB_AI_API_BASE", f"http://127.0.0.1:{free_port()}/v1")
    monkeypatch.setenv("KB_AI_MAX_RETRIES", "0")
    result = CliRunner().invoke(main, ["--kb", str(tmp_path / "kb"), "doctor"])
    assert result.exit_code == 1
    assert "answers    no" in result.output


def test_doctor_without_any_model_says_how_to_set_one(tmp_path, monkeypatch, embedded, no_ollama):
    monkeypatch.setenv("KB_AI_DETECT_MODEL", "1")
    monkeypatch.setenv("OLLAMA_HOST", no_ollama["OLLAMA_HOST"])
    result = CliRunner().invoke(main, ["--kb", str(tmp_path / "kb"), "doctor"])
    assert result.exit_code == 2
    assert "No model configured" in result.output and "kb-ai[local]" in result.output


def test_a_local_model_generates_with_the_threads_the_setting_names(tmp_path, monkeypatch):
    pytest.importorskip("llama_cpp")
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setenv("KB_AI_MODEL", f"local/{gguf}")
    kb = ["--kb", str(tmp_path / "kb"), "doctor", "--no-call"]
    default = CliRunner().invoke(main, kb)
    assert default.exit_code == 0, default.output
    cpus = _local.cpu_threads()  # by default half of them generate: busy cores slow it
    assert f"threads    {max(1, cpus // 2)} generating, {cpus} reading" in default.output
    monkeypatch.setenv("KB_AI_LOCAL_THREADS", "3")
    named = CliRunner().invoke(main, kb)
    assert f"threads    3 generating, {cpus} reading" in named.output


def test_the_embedded_model_refuses_parts_that_do_not_hash_right(tmp_path, monkeypatch):
    parts = [tmp_path / "p1.bin", tmp_path / "p2.bin"]
    parts[0].write_bytes(b"GGUF not really")
    parts[1].write_bytes(b" a model")
    model = _local.EmbeddedModel("t", "t.gguf", (("a", "p1"), ("b", "p2")), "0" * 64, 23, "t")
    monkeypatch.setattr(_local, "_part_paths", lambda m: parts)
    with pytest.raises(ConfigError, match="refusing to load it"):
        _local.assemble(model, tmp_path / "cache")
    assert not list((tmp_path / "cache").iterdir())  # nothing half-assembled left behind
    import hashlib

    good = hashlib.sha256(b"GGUF not really a model").hexdigest()
    model = _local.EmbeddedModel("t", "t.gguf", model.parts, good, 23, "t")
    path = _local.assemble(model, tmp_path / "cache")
    assert path.read_bytes() == b"GGUF not really a model"


def test_the_embedded_model_file_is_hashed_once_unless_it_changes(tmp_path, monkeypatch):
    import hashlib
    import os

    parts = [tmp_path / "p1.bin"]
    parts[0].write_bytes(b"GGUF not really a model")
    good = hashlib.sha256(b"GGUF not really a model").hexdigest()
    model = _local.EmbeddedModel("t", "t.gguf", (("a", "p1"),), good, 23, "t")
    monkeypatch.setattr(_local, "_part_paths", lambda m: parts)
    hashed = []
    real = _local._sha256
    monkeypatch.setattr(_local, "_sha256", lambda path: hashed.append(path) or real(path))
    path = _local.assemble(model, tmp_path / "cache")
    _local.assemble(model, tmp_path / "cache")
    _local.assemble(model, tmp_path / "cache")
    assert not hashed  # hashed as it was assembled, not again before each call

    # changed in place, same size: hashed again, refused, and assembled anew from the parts
    path.write_bytes(b"GGUF not really a mode!")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    before = len(hashed)
    assert _local.assemble(model, tmp_path / "cache").read_bytes() == b"GGUF not really a model"
    assert len(hashed) > before


def test_the_grammar_keeps_small_models_short_and_in_schema_order():
    schema = {
        "type": "object",
        "properties": {
            "title": {"type": "string", "maxLength": 100},
            "body": {"type": "string", "maxLength": 24_000},
            "why": {"type": "string", "maxLength": 500},
            "tags": {"type": "array", "maxItems": 4, "items": {"type": "string", "maxLength": 40}},
        },
    }
    bounded = _local.bounded_for_grammar(schema)
    assert list(bounded["properties"]) == ["title", "body", "why", "tags"]
    body = bounded["properties"]["body"]  # too long for a maxLength grammar: a pattern
    assert "maxLength" not in body and f"{{0,{_local.GRAMMAR_LONG_CAP // 50}}}" in body["pattern"]
    assert bounded["properties"]["why"]["maxLength"] == _local.GRAMMAR_STRING_CAP
    assert bounded["properties"]["tags"] == schema["properties"]["tags"]
    people = {"type": "array", "maxItems": 12, "items": {"type": "object", "properties": {}}}
    assert _local.bounded_for_grammar(people)["maxItems"] == _local.GRAMMAR_MAX_ITEMS


def test_the_grammar_does_not_cut_a_sources_own_list():
    # A railway's facts were cut at 5 (its lengths, station count and years were lost).
    facts = {"type": "array", "maxItems": 30, "items": {"type": "string", "maxLength": 400}}
    assert _local.bounded_for_grammar(facts)["maxItems"] == 30
    enumeration = {"type": "array", "maxItems": 40, "items": {"type": "string"}}
    assert _local.bounded_for_grammar(enumeration)["maxItems"] == 40
