"""How a JSON reply is asked for: the structured-output mode and what it adds to a call."""

from __future__ import annotations

import json

LOCAL_SCHEMA_PROVIDERS = ("ollama", "ollama_chat")
# Models run in process by llama.cpp: the schema becomes a grammar (json_object + schema).
IN_PROCESS_PROVIDERS = ("local",)


def provider_of(model: str) -> str:
    return model.split("/", 1)[0] if "/" in model else ""


def auto_mode(model: str, api_base: str | None, supports_response_schema: bool | None) -> str:
    """The mode "auto" means for this model.

    Ollama enforces a JSON schema. A custom OpenAI-compatible server (``openai/<name>``
    with an api_base) gets json_object with the schema: llama.cpp's server answers
    json_schema with HTTP 500 but enforces json_object+schema, vLLM and Ollama accept
    it, and litellm's capability map says "no" for every custom endpoint. A local GGUF
    model (``local/...``) gets json_object with the schema, which llama.cpp turns into a
    grammar. Otherwise
    litellm's map decides (``supports_response_schema``; None means "not asked yet").
    """
    provider = provider_of(model)
    if provider in LOCAL_SCHEMA_PROVIDERS:
        return "json_schema"
    if provider in IN_PROCESS_PROVIDERS:
        return "json_object"
    if provider == "openai" and api_base:
        return "json_object"
    return "json_schema" if supports_response_schema else "prompt"


def needs_capability_check(model: str, api_base: str | None) -> bool:
    """Whether auto_mode needs litellm's capability map for this model."""
    provider = provider_of(model)
    return not (
        provider in LOCAL_SCHEMA_PROVIDERS
        or provider in IN_PROCESS_PROVIDERS
        or (provider == "openai" and api_base)
    )


def response_format(mode: str, schema: dict, schema_name: str) -> dict | None:
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": schema_name, "schema": schema}}
    if mode == "json_object":
        return {"type": "json_object", "schema": schema}
    return None


def schema_instruction(schema: dict) -> str:
    what = "one JSON object" if schema.get("type") == "object" else "one JSON value"
    return f"Reply with {what} matching this JSON Schema, and nothing else:\n" + json.dumps(
        schema, ensure_ascii=False
    )


def with_schema_instruction(messages: list[dict], schema: dict) -> list[dict]:
    """A copy of the messages with the schema appended to the last system message
    (or a system message added in front when there is none)."""
    instruction = schema_instruction(schema)
    out = [dict(m) for m in messages]
    for message in reversed(out):
        if message.get("role") == "system":
            content = message.get("content")
            if isinstance(content, list):
                message["content"] = [*content, {"type": "text", "text": instruction}]
            else:
                message["content"] = f"{content}\n\n{instruction}" if content else instruction
            return out
    return [{"role": "system", "content": instruction}, *out]


def prepare(
    messages: list[dict], mode: str, schema: dict | None, schema_name: str
) -> tuple[list[dict], dict | None]:
    """The messages and response_format to send for this mode (unchanged without a schema)."""
    if schema is None:
        return messages, None
    if mode in ("json_object", "prompt"):
        messages = with_schema_instruction(messages, schema)
    return messages, response_format(mode, schema, schema_name)
