"""The stages that call the model, and what each may spend: its timeout and its reply's
token budget, each a setting of its own (kb_ai/settings/fields.py takes its defaults from here).

Every ``llm.complete(..., stage=...)`` names a stage of this table; a stage the table
does not know is a programming error, not a silent default. Hints that tell a user to
raise a limit name the setting this table gives, so they always name one that exists.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Stage:
    name: str
    call: str  # what one call of it does, for the settings' help
    timeout_s: float  # seconds per call (setting ``timeout_setting``)
    local_timeout_s: float  # the same for a model running in process on the CPU
    max_tokens: int | None  # a reply's token budget (``max_tokens_setting``); 0: not sent
    local_max_tokens: int | None = None  # a local model's, when it differs
    answering: bool = False  # someone waits for it: served first by the local model
    timeout_key: str = ""  # the setting of its timeout, when it shares another stage's
    max_tokens_key: str = ""  # the setting of its budget, when it shares another's

    @property
    def timeout_setting(self) -> str:
        return self.timeout_key or f"timeout_{self.name}"

    @property
    def max_tokens_setting(self) -> str | None:
        """The setting of its reply budget; None: the caller sends a fixed one."""
        if self.max_tokens is None:
            return None
        return self.max_tokens_key or f"max_tokens_{self.name}"


# Budgets fit what each stage's schema allows in practice (an extraction of a
# 24,000-character chunk, an article of up to 24,000 characters, a pick of a few paths)
# with room to spare; a reply that reaches one is cut off, and refused as incomplete with
# a hint naming the setting. A local model is held to less: a grammar-bounded JSON reply
# finishes within 4,096 tokens, and free text has no grammar to end it.
STAGES: dict[str, Stage] = {
    s.name: s
    for s in (
        Stage("extract", "extract call", 180.0, 900.0, 8_192, 4_096),
        Stage("classify", "classify call", 120.0, 600.0, 1_024),
        Stage("write", "write call", 300.0, 900.0, 8_192, 4_096),
        Stage(
            "select",
            "page selection call (the first pick and each follow-up)",
            60.0,
            300.0,
            512,
            answering=True,
        ),
        Stage(
            "rewrite",
            "call rewriting a follow-up question to stand alone",
            120.0,
            300.0,
            512,
            answering=True,
        ),
        Stage("answer", "answer call", 180.0, 600.0, 4_096, 1_024, answering=True),
        # the coverage judge (retrieval/judge.py): a sentence number and a short answer,
        # under a grammar; on the CPU a few hundred prompt tokens and a dozen generated
        Stage(
            "judge",
            "coverage judge call (does a sentence read answer the question)",
            60.0,
            300.0,
            128,
            answering=True,
        ),
        Stage("lint", "kb-ai lint --deep call", 120.0, 900.0, 0),
        # `kb-ai doctor`'s one short question: waits as long as an answer would, and
        # sends a budget of its own (a few tokens)
        Stage(
            "doctor",
            "model check",
            180.0,
            600.0,
            None,
            answering=True,
            timeout_key="timeout_answer",
        ),
    )
}


def stage_of(name: str) -> Stage:
    """The stage ``name`` (a ValueError for one the table does not have)."""
    try:
        return STAGES[name]
    except KeyError:
        raise ValueError(f"no model stage {name!r}: one of {', '.join(STAGES)}") from None


def own_stages() -> list[Stage]:
    """The stages whose timeout setting is their own (one setting each)."""
    return [s for s in STAGES.values() if not s.timeout_key]
