"""Whether a model answers: one short structured call, the check of `kb-ai doctor` and
of `kb-ai hooks install`."""

from __future__ import annotations

from kb_ai.llm.types import LLM, Completion

PROBE_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["answer"],
    "additionalProperties": False,
}
PROBE_MESSAGES = [
    {"role": "system", "content": "You answer questions about arithmetic in JSON."},
    {"role": "user", "content": "Is 2 + 2 equal to 4? Answer yes or no."},
]


async def probe(llm: LLM) -> Completion:
    """Ask ``llm`` a question it can answer in one word; its reply, or its LLMError."""
    return await llm.complete(
        PROBE_MESSAGES, stage="doctor", schema=PROBE_SCHEMA, schema_name="check", max_tokens=32
    )
