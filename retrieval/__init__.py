"""Answering from the wiki: catalog -> shortlist -> selection -> reading -> cited answer."""

from retrieval.answer import AskEvent, Delta, Done, Error, Note, Status
from retrieval.ask import (
    MAX_QUESTION_CHARS,
    NOT_COVERED,
    Answer,
    Asker,
    EmptyWikiError,
    Turn,
    ask,
    check_question,
)
from retrieval.candidates import Catalog, estimate_tokens, pick_candidates
from retrieval.checks import AnswerCheck, Finding
from retrieval.pages import Citation, Page, check_paths, read_page, validate_citations
from retrieval.selection import SelectionError
from retrieval.sessions import ChatStore, delete_sessions_of

__all__ = [
    "MAX_QUESTION_CHARS",
    "NOT_COVERED",
    "Answer",
    "AnswerCheck",
    "AskEvent",
    "Asker",
    "Catalog",
    "ChatStore",
    "Citation",
    "Delta",
    "Done",
    "EmptyWikiError",
    "Error",
    "Finding",
    "Note",
    "Page",
    "SelectionError",
    "Status",
    "Turn",
    "ask",
    "check_paths",
    "check_question",
    "delete_sessions_of",
    "estimate_tokens",
    "pick_candidates",
    "read_page",
    "validate_citations",
]
