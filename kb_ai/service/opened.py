"""A knowledge base opened for an actor: its settings, the knowledge base acting as the
actor, and the model factory. Every edge (CLI, web app, MCP server, worker) opens one
with :func:`open_kb` and does its work through it (see kb_ai/service/__init__.py)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from kb_ai.llm import LLM, open_llm
from kb_ai.llm.store import SHARED_MIGRATIONS as LLM_MIGRATIONS
from kb_ai.settings import Settings, load_settings
from wiki import KnowledgeBase
from wiki.actors import Actor
from wiki.database import shared_connect, shared_database

log = logging.getLogger("kb_ai.service")


@dataclass(frozen=True)
class OpenKb:
    """One knowledge base, its settings and who acts on it. ``kb`` carries the actor, so
    each commit made through it has the actor as author (wiki/actors.py)."""

    kb: KnowledgeBase
    settings: Settings
    actor: Actor
    llm_factory: Callable[..., LLM] = open_llm

    @property
    def root(self) -> Path:
        return self.kb.root

    def acting_as(self, actor: Actor) -> OpenKb:
        """The same knowledge base for another actor (a web request's person)."""
        return replace(self, kb=self.kb.acting_as(actor), actor=actor)

    def open_llm(self) -> LLM:
        """A model client for this knowledge base, logging its calls to its state.db.
        Raises ConfigError when no model is configured."""
        return self.llm_factory(self.settings, db_path=self.kb.state_db)

    def note(self, verb: str, detail: str = "") -> None:
        """A log line saying who did what (the audit trail's first form)."""
        log.info("%s %s%s", self.actor.label, verb, f": {detail}" if detail else "")


def open_kb(
    root: str | Path | None = None,
    settings: Settings | None = None,
    actor: Actor | None = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    detect: bool = True,
    llm_factory: Callable[..., LLM] | None = None,
) -> OpenKb:
    """Open the knowledge base at ``root`` (or ``settings.kb_dir``) for ``actor``.

    ``settings``: built by the caller already (the CLI's, with its options); otherwise
    loaded here from ``overrides``, the environment and kb-ai.toml (``detect``: find a
    model when none is named). ``actor``: who acts; the CLI user when not given.
    ``llm_factory``: how model clients are made (tests, benches); by default
    :func:`open_llm`, logging calls and caching replies in the shared database when
    ``database_url`` names one (every server then replays what another cached).
    Raises NotAKnowledgeBaseError when the directory is not one.
    """
    if settings is None:
        settings = load_settings(root, dict(overrides or {}), detect=detect)
    kb = KnowledgeBase.open(settings.kb_dir)
    if settings.database_url:  # reached and checked now: a wrong URL fails at start
        shared_database(kb)
    if llm_factory is None:
        connect = shared_connect(kb, "llm", LLM_MIGRATIONS)
        llm_factory = open_llm if connect is None else partial(open_llm, connect=connect)
    if settings.wiki_remote:  # the setting names the remote to follow (wiki/remote.py)
        from wiki.remote import set_remote

        set_remote(kb, settings.wiki_remote)
    actor = actor or Actor.cli_user(kb.root)
    return OpenKb(kb.acting_as(actor), settings, actor, llm_factory)
