import json

import pytest

from tests.fakes import kb_responder
from tests.fakes.fake_llm import FakeLLM


def responder_handler(stage, messages, schema):
    """kb_responder's answers, in-process: the same request a server would see."""
    request = {"messages": messages}
    if schema is not None:
        request["response_format"] = {"type": "json_schema", "json_schema": {"schema": schema}}
    content = kb_responder.respond(request).content
    return json.loads(content) if schema is not None else content


@pytest.fixture
def fake_llm():
    return FakeLLM(responder_handler)


@pytest.fixture
def notes(tmp_path):
    d = tmp_path / "notes"
    d.mkdir()
    return d
