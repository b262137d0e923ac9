"""Answering from the wiki: catalog -> shortlist -> selection -> reading -> cited answer."""

from retrieval.ask import (
    NOT_COVERED,
    Answer,
    Asker,
    EmptyWikiError,
    Event,
    Turn,
    ask,
)
from retrieval.candidates import Catalog, estimate_tokens, pick_candidates
from retrieval.checks import AnswerCheck, Finding
from retrieval.pages import Citation, Page, check_paths, read_page, validate_citations
from retrieval.selection import SelectionError
from retrieval.sessions import ChatStore

__all__ = [
    "NOT_COVERED",
    "Answer",
    "AnswerCheck",
    "Asker",
    "Catalog",
    "ChatStore",
    "Citation",
    "EmptyWikiError",
    "Event",
    "Finding",
    "Page",
    "SelectionError",
    "Turn",
    "ask",
    "check_paths",
    "estimate_tokens",
    "pick_candidates",
    "read_page",
    "validate_citations",
]
