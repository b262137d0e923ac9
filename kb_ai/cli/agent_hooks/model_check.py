"""Whether captured sessions would compile: `hooks install` runs the model check of
`kb-ai doctor` for the knowledge base, and says where the model settings must be.

A hook is started by the agent, and the agent often by an IDE or a desktop app that
never read the user's shell profile: settings that exist only in the shell's
environment (KB_AI_MODEL, a provider key) are not there when the worker compiles. So
the check says plainly where the model came from and where it has to be.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from kb_ai.errors import KbAiError, LLMError
from kb_ai.settings import Settings, load_settings

CHECK_SECONDS = 30.0  # install waits no longer than this for the model's answer


async def _ask(settings: Settings) -> None:
    from kb_ai.llm import open_llm
    from kb_ai.llm.probe import probe

    async with open_llm(dataclasses.replace(settings, max_retries=0)) as llm:
        await asyncio.wait_for(probe(llm), CHECK_SECONDS)


def check_model(kb: Path, *, call: bool = True) -> tuple[bool, list[str]]:
    """(whether captures would compile, lines saying so and what to do)."""
    toml = kb / "kb-ai.toml"
    where = (
        f"Hooks started by an IDE or a desktop app do not see your shell's environment: "
        f'put the model in {toml} (model = "...", and api_base for a local server); a '
        f"provider's key must be in the environment of the app that starts the agent."
    )
    try:
        settings = load_settings(kb, detect=True)
    except KbAiError as exc:
        return False, [f"Captures would fail: the settings of {kb} are wrong ({exc}).", where]
    if not settings.model:
        return False, [
            f"Captures would fail: no model is set for {kb}; sessions are kept and retried, "
            "but nothing compiles until there is one.",
            where,
        ]
    lines = [f"Model for captured sessions: {settings.model} ({settings.model_source})."]
    ok = True
    if call and settings.is_local:
        lines.append("The embedded model runs in the worker itself: no server to reach.")
    elif call:
        try:
            asyncio.run(_ask(settings))
            lines.append("It answers: captured sessions will compile.")
        except TimeoutError:
            ok = False
            lines.append(
                f"Captures would fail now: the model did not answer within {CHECK_SECONDS:.0f} s. "
                "Sessions are kept and retried; once it answers: kb-ai hooks retry"
            )
        except (LLMError, KbAiError) as exc:
            ok = False
            lines.append(
                f"Captures would fail now: the model does not answer ({exc}). Sessions are "
                "kept and retried; once it answers: kb-ai hooks retry"
            )
    if not str(settings.model_source or "").startswith("model in "):
        lines.append(where)
    return ok, lines
