import json

import pytest

from kb_ai.settings import load_settings
from tests.fakes import kb_responder
from tests.fakes.fake_llm import FakeLLM
from wiki import KnowledgeBase


def responder_handler(stage, messages, schema):
    """kb_responder's answers, in-process: the same request a server would see."""
    request = {"messages": messages}
    if schema is not None:
        request["response_format"] = {"type": "json_schema", "json_schema": {"schema": schema}}
    content = kb_responder.respond(request).content
    return json.loads(content) if schema is not None else content


@pytest.fixture
def kb(tmp_path):
    return KnowledgeBase.init(tmp_path / "kb")


@pytest.fixture
def settings(kb):
    return load_settings(kb.root, {"model": "fake/model"}, environ={})


@pytest.fixture
def fake_llm():
    return FakeLLM(responder_handler)


@pytest.fixture
def notes(tmp_path):
    d = tmp_path / "notes"
    d.mkdir()
    return d
