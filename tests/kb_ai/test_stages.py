"""The stage table (kb_ai/stages.py): every stage the code calls the model with has a
timeout and a reply budget that kb-ai.toml accepts, and every hint names one of them."""

from __future__ import annotations

import ast
import asyncio
from dataclasses import replace
from pathlib import Path

import pytest

from kb_ai.errors import CircuitOpenError, LLMTimeoutError
from kb_ai.llm import open_llm
from kb_ai.settings import TOML_KEYS, Settings, load_settings
from kb_ai.stages import STAGES
from tests.fakes.faulty_server import faulty_server

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("kb_ai", "wiki", "compiler", "retrieval", "web")


def stages_called() -> dict[str, str]:
    """stage name -> where the code first passes it as ``stage="..."`` to a call."""
    found: dict[str, str] = {}
    for package in PACKAGES:
        for file in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.Call):
                    continue
                for kw in node.keywords:
                    if kw.arg == "stage" and isinstance(kw.value, ast.Constant):
                        where = f"{file.relative_to(ROOT)}:{node.lineno}"
                        found.setdefault(kw.value.value, where)
    return found


def test_every_stage_the_code_calls_is_in_the_table():
    called = stages_called()
    assert {"extract", "classify", "write", "select", "answer", "rewrite", "lint"} <= set(called)
    unknown = {name: where for name, where in called.items() if name not in STAGES}
    assert not unknown, f"stages with no timeout or budget of their own: {unknown}"


def test_every_setting_the_table_names_is_one_kb_ai_toml_accepts(tmp_path):
    values: dict[str, float] = {}
    for i, stage in enumerate(STAGES.values()):
        for setting in (stage.timeout_setting, stage.max_tokens_setting):
            if setting is not None:
                assert setting in TOML_KEYS, (stage.name, setting)
                values.setdefault(setting, 100 + i)
    (tmp_path / "kb-ai.toml").write_text("".join(f"{k} = {v}\n" for k, v in values.items()))
    settings = load_settings(tmp_path, environ={})
    for stage in STAGES.values():  # what a person wrote is what the stage's calls use
        assert settings.timeout(stage.name) == values[stage.timeout_setting]
        if stage.max_tokens_setting is not None:
            assert settings.max_tokens(stage.name) == values[stage.max_tokens_setting]


def test_an_unknown_stage_is_refused_rather_than_given_a_default():
    with pytest.raises(ValueError, match="no model stage 'rewriet'"):
        Settings().timeout("rewriet")


def test_local_models_get_a_longer_timeout_for_every_stage():
    local = load_settings(overrides={"model": "local/default"}, environ={})
    hosted = load_settings(overrides={"model": "openai/x"}, environ={})
    for stage in STAGES:
        assert local.timeout(stage) > hosted.timeout(stage), stage


@pytest.mark.parametrize("stage", ["rewrite", "lint"])
def test_a_timed_out_call_waits_its_stages_setting_and_the_hint_names_it(tmp_path, stage):
    """rewrite and lint used to wait a silent 120 s and hint at settings kb-ai.toml refused."""
    (tmp_path / "kb-ai.toml").write_text(f"timeout_{stage} = 0.2\n")
    with faulty_server("hang") as server:
        settings = replace(
            load_settings(tmp_path, environ={}),
            model="openai/fake-model",
            api_base=server.base_url,
            api_key="sk-test",
            transport="http",
            max_retries=0,
            breaker_timeouts=1,
        )

        async def call():
            async with open_llm(settings) as llm:
                errors = []
                for _ in range(2):  # the second finds the breaker open
                    try:
                        await llm.complete([{"role": "user", "content": "hi"}], stage=stage)
                    except (LLMTimeoutError, CircuitOpenError) as exc:
                        errors.append(exc)
                return errors

        timed_out, broken = asyncio.run(asyncio.wait_for(call(), 30))
    assert isinstance(timed_out, LLMTimeoutError)
    assert f"within 0.2 s ({stage})" in str(timed_out)
    assert f"raise timeout_{stage}" in (timed_out.hint or "")
    assert isinstance(broken, CircuitOpenError)
    assert f"raise timeout_{stage}" in (broken.hint or "")
