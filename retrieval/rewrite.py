"""The standalone question: a follow-up in a chat ("and who owns it?") rewritten with
what the conversation so far says, so that search and selection see every word they
need. The reply is untrusted: anything but a non-empty string leaves the question as
the user asked it."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kb_ai.llm import LLM, Completion
from kb_ai.prompts import PromptLibrary
from retrieval.answer import Turn

REWRITE_SCHEMA = {
    "type": "object",
    "properties": {"question": {"type": "string", "maxLength": 1000}},
    "required": ["question"],
    "additionalProperties": False,
}


async def standalone_question(
    llm: LLM,
    prompts: PromptLibrary,
    question: str,
    history: Sequence[Turn],
    paid: Callable[[Completion], Completion],
) -> str:
    """``question`` as it reads on its own after ``history`` (its last 8 turns);
    ``paid`` counts the call's usage."""
    messages = prompts.render(
        "rewrite", history=[t.__dict__ for t in history[-8:]], question=question
    )
    reply = paid(
        await llm.complete(messages, stage="rewrite", schema=REWRITE_SCHEMA, schema_name="question")
    )
    rewritten = reply.data.get("question") if isinstance(reply.data, dict) else None
    if not (isinstance(rewritten, str) and rewritten.strip()):
        reply.reject()
        return question
    reply.accept()
    return " ".join(rewritten.split())
