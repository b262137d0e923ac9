"""The application layer: one knowledge base opened for an actor, and every verb the
edges offer (ask, compile, submit, remove, review, lint) done through it.

The CLI, the web app, the MCP server and the worker hold no wiring of their own: they
open a knowledge base with :func:`open_kb` (settings, the knowledge base acting as the
actor, the model factory) and call the verbs here. The actor (wiki/actors.py) reaches
every commit as its git author (kb-ai is the committer), log.md and the service's log
lines. Results are typed (retrieval's events and Answer, compiler's results); the edges
turn them into text or JSON.

It stands above compiler/ and retrieval/, below the edges; nothing under it imports it
(tests/test_import_direction.py). This module imports only what is light; the verbs live
in modules of their own, imported where they are used, so `kb-ai ask` does not load the
compiler:

    kb_ai.service.asking      ask_events, ask
    kb_ai.service.compiling   compile_paths, compiler, worker, remove, prune
    kb_ai.service.submitting  submit (Document)
    kb_ai.service.reviewing   reviews, review, diff, approve, reject
    kb_ai.service.linting     lint
    kb_ai.service.remote      init_from_remote, publish, remote_state, Follower
"""

from kb_ai.service.errors import STATUS_BY_TYPE, error_body, error_fields, status_for
from kb_ai.service.opened import OpenKb, open_kb
from wiki.actors import Actor

__all__ = [
    "STATUS_BY_TYPE",
    "Actor",
    "OpenKb",
    "error_body",
    "error_fields",
    "open_kb",
    "status_for",
]
