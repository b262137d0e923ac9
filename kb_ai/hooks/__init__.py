"""Agent memory hooks: capture coding-agent sessions, hand back a short snapshot.

The hook itself (kb_ai/hooks/run.py) imports only this package's light modules: this
file imports nothing, so ``python -m kb_ai.hooks`` starts in milliseconds.
"""
