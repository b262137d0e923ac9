"""``python -m kb_ai.hooks NAME --agent A``: the agent hook, without the CLI's imports."""

from kb_ai.hooks.run import main

main()
