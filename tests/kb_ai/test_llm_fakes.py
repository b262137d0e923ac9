"""The lazy import of litellm, and the test fakes others build on."""

import asyncio
import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from kb_ai.errors import ConfigError, LLMOutputError, LLMTimeoutError
from kb_ai.llm import Completion, Usage, open_llm
from kb_ai.settings import Settings
from tests.fakes.fake_llm import FakeLLM
from tests.fakes.openai_server import FakeOpenAIServer, Reply

ROOT = Path(__file__).resolve().parents[2]
PATHS = {"type": "object", "properties": {"paths": {"type": "array"}}, "required": ["paths"]}


def _run_python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


def test_importing_the_llm_layer_does_not_import_litellm():
    assert _run_python("import sys, kb_ai.llm; print('litellm' in sys.modules)") == "False"


def test_a_question_to_an_openai_compatible_server_never_imports_litellm():
    with FakeOpenAIServer() as server:
        server.queue("quick answer")
        code = (
            "import asyncio, sys\n"
            "from kb_ai.llm import open_llm\n"
            "from kb_ai.settings import Settings\n"
            f"s = Settings(model='openai/m', api_base={server.base_url!r})\n"
            "async def main():\n"
            "    async with open_llm(s) as llm:\n"
            "        items = [i async for i in llm.stream([{'role': 'user', 'content': 'q'}],"
            " stage='answer')]\n"
            "    print(items[-1].text, 'litellm' in sys.modules)\n"
            "asyncio.run(main())\n"
        )
        assert _run_python(code) == "quick answer False"


def test_a_slow_first_import_of_litellm_does_not_time_out_the_first_call():
    # On a loaded machine ``import litellm`` took 8 s: inside the attempt's clock, the
    # first call timed out (a retry, a timeout counted toward the breaker) and litellm
    # dropped the coroutine it had made, warning "... was never awaited" at exit.
    with FakeOpenAIServer() as server:
        server.queue("first answer")
        code = (
            "import asyncio, sys, time, warnings\n"
            "warnings.simplefilter('error')\n"
            "class SlowImport:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'litellm':\n"
            "            time.sleep(4.5)\n"
            "        return None\n"
            "sys.meta_path.insert(0, SlowImport())\n"
            "from kb_ai.llm import open_llm\n"
            "from kb_ai.settings import Settings\n"
            f"s = Settings(model='openai/m', api_base={server.base_url!r}, api_key='sk-test',"
            " transport='litellm', max_retries=0, timeout_select=4.0)\n"
            "async def main():\n"
            "    async with open_llm(s) as llm:\n"
            "        done = await llm.complete([{'role': 'user', 'content': 'q'}], stage='select')\n"
            "    print(done.text, llm.breaker.timeouts)\n"
            "asyncio.run(main())\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip() == "first answer 0"
        assert "never awaited" not in done.stderr
        assert len(server.requests) == 1


def test_plain_http_needs_an_openai_compatible_endpoint(tmp_path):
    # Without an api_base there is no endpoint to speak HTTP to: litellm it is.
    llm = open_llm(Settings(kb_dir=tmp_path, model="openai/gpt-4o-mini"))
    assert type(llm._transport).__name__ == "LiteLLMTransport"
    custom = Settings(kb_dir=tmp_path, model="openai/m", api_base="http://127.0.0.1:9/v1")
    assert type(open_llm(custom)._transport).__name__ == "HttpTransport"
    forced = Settings(
        kb_dir=tmp_path, model="openai/m", api_base="http://127.0.0.1:9/v1", transport="litellm"
    )
    assert type(open_llm(forced)._transport).__name__ == "LiteLLMTransport"
    with pytest.raises(ConfigError, match="OpenAI-compatible"):
        open_llm(Settings(kb_dir=tmp_path, model="anthropic/claude-x", transport="http"))


def test_fake_server_speaks_the_wire_format_on_both_paths():
    with FakeOpenAIServer() as server:
        server.queue(Reply("first"), Reply(status=418, body="teapot"))
        for path in ("/v1/chat/completions", "/chat/completions"):
            body = json.dumps({"model": "m", "messages": []}).encode()
            request = urllib.request.Request(
                server.base_url.removesuffix("/v1") + path, data=body, method="POST"
            )
            try:
                with urllib.request.urlopen(request, timeout=5) as response:
                    data = json.loads(response.read())
                assert data["choices"][0]["message"]["content"] == "first"
                assert data["usage"]["total_tokens"] > 0
            except urllib.error.HTTPError as exc:
                assert exc.code == 418 and exc.read() == b"teapot"
        assert len(server.requests) == 2


def test_fake_server_script_serves_on_the_given_port():
    with FakeOpenAIServer() as probe:  # borrow a free port, then release it
        port = probe.port
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.openai_server", "--port", str(port), "--delay", "0.01"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert "fake OpenAI server on" in proc.stdout.readline()
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/chat/completions", data=body.encode(), method="POST"
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            assert json.loads(response.read())["choices"][0]["message"]["content"] == "ok"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()


def test_fake_llm_replays_the_queue_then_asks_the_handler():
    llm = FakeLLM(handler=lambda stage, messages, schema: {"paths": [stage]})
    llm.enqueue({"paths": ["a.md"]}, '```json\n["b.md"]\n```', LLMTimeoutError("slow"))

    async def calls():
        ask = [{"role": "user", "content": "which?"}]
        first = await llm.complete(ask, stage="select", schema=PATHS)
        second = await llm.complete(ask, stage="select", schema=PATHS)
        with pytest.raises(LLMTimeoutError):
            await llm.complete(ask, stage="select", schema=PATHS)
        fourth = await llm.complete(ask, stage="classify", schema=PATHS)
        return first, second, fourth

    first, second, fourth = asyncio.run(calls())
    assert isinstance(first, Completion) and first.data == {"paths": ["a.md"]}
    assert second.data == {"paths": ["b.md"]}  # tolerant parsing, as in production
    assert fourth.data == {"paths": ["classify"]}
    assert llm.stages() == ["select", "select", "select", "classify"]
    assert llm.calls[0].schema == PATHS
    assert llm.usage.calls == 3 and llm.usage.prompt_tokens > 0


def test_fake_llm_refuses_what_the_real_client_refuses():
    llm = FakeLLM().enqueue("no json here")
    with pytest.raises(LLMOutputError):
        asyncio.run(llm.complete([], stage="select", schema=PATHS))


def test_fake_llm_tracks_concurrency_and_streams():
    llm = FakeLLM(delay=0.02, max_concurrency=2)

    async def many():
        await asyncio.gather(*(llm.complete([], stage="extract") for _ in range(6)))
        return [item async for item in llm.stream([], stage="answer")]

    items = asyncio.run(many())
    assert llm.max_in_flight == 2
    assert "".join(items[:-1]) == "ok" and items[-1].usage.calls == 1
    assert llm.usage == Usage(7, llm.usage.prompt_tokens, llm.usage.completion_tokens, 0.0)
