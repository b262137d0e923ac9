"""The agent hook's process (``python -m kb_ai.hooks NAME ...``, the ``kb-ai-hook``
script): read the event, answer, exit 0, always. An entry point, like kb_ai/__main__.py:
it imports the light runtime (kb_ai/hooks/run.py) and, for the prompt hook only, its
search of the wiki's index (kb_ai/hooks/hint.py) and, once it has answered, what
writes the shell hook's hint file when that is stale (kb_ai/hooks/hintfile.py)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from kb_ai.hooks.run import MAX_STDIN_BYTES, USAGE, parse_args, run_hook

_answered: list[Path] = []  # the knowledge base a prompt hint was given for


def _prompt_hint(root: Path, event: Mapping[str, object]) -> str:
    from kb_ai.hooks.hint import prompt_hint  # sqlite3: the prompt hook only

    _answered.append(root)
    return prompt_hint(root, event)


def _refresh_hint_file() -> None:
    """After the answer is out: when the shell hook's hint file is stale or missing,
    start a process of its own that writes it again (kb_ai/hooks/hintfile.py: seconds
    on a wiki of thousands of pages, which the agent must not wait for), so the next
    prompts need no Python. Only for the shell hook (which says so in KB_AI_SHELL_HOOK):
    the Python hook alone reads none."""
    if _answered and os.environ.get("KB_AI_SHELL_HOOK"):
        from kb_ai.hooks.hintfile import start_writing

        start_writing(_answered[0])


def main(argv: list[str] | None = None) -> None:
    parsed = parse_args(sys.argv[1:] if argv is None else argv)
    if parsed is None:
        sys.stderr.write(USAGE + "\n")
        sys.stderr.flush()
        os._exit(0)  # a wrong command line must not block the agent either
    name, agent, kb = parsed
    try:
        data = b"" if sys.stdin.isatty() else sys.stdin.buffer.read(MAX_STDIN_BYTES)
    except (OSError, ValueError):
        data = b""
    text = data.decode("utf-8", errors="replace")
    out = run_hook(name, text, agent=agent, kb_dir=kb, prompt=_prompt_hint)
    if out:
        sys.stdout.write(out if out.endswith("\n") else out + "\n")
    sys.stdout.flush()
    _refresh_hint_file()
    os._exit(0)  # nothing left to wait for: no interpreter teardown may delay the agent


if __name__ == "__main__":
    main()
