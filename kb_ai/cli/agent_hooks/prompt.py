"""The optional prompt hook (`hooks install --prompt-hint`): one line with the number of
wiki pages that look relevant to the prompt, and no wiki text. It searches the wiki, so
it lives here, above the light hook runtime (kb_ai/hooks/), which is handed it."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import closing
from pathlib import Path

from wiki import KnowledgeBase, open_state
from wiki.search import SearchIndex


def prompt_hint(root: Path, event: Mapping[str, object]) -> str:
    prompt = event.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return ""
    with closing(open_state(KnowledgeBase.open(root))) as conn:
        hits = SearchIndex(conn).search(prompt[:2000], limit=20)
    if not hits:
        return ""
    n = len(hits)
    return (
        f"kb-ai: {n} wiki page{'s' if n != 1 else ''} may be relevant; the `ask` tool of the "
        "kb-ai MCP server answers from them with citations."
    )
