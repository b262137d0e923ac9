"""What asking a question gives back: the turns of a chat, the events of an answer as
it happens, and the answer itself (JSON-ready for the CLI, the web and MCP)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kb_ai.errors import KbAiError
from kb_ai.llm import Usage
from retrieval.checks import Finding
from retrieval.follow import Hop
from retrieval.pages import Citation

__all__ = ["Answer", "Event", "Turn"]


@dataclass(frozen=True)
class Turn:
    role: str  # "user" | "assistant"
    content: str


@dataclass
class Answer:
    answer: str
    citations: list[Citation] = field(default_factory=list)
    read: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    question: str = ""  # the standalone question actually answered
    covered: bool = True
    shortlisted: bool = False
    findings: list[Finding] = field(default_factory=list)  # what the checks removed, and why
    hops: list[Hop] = field(default_factory=list)  # each search-and-read round, in order

    def as_dict(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "citations": [c.as_dict() for c in self.citations],
            "read": self.read,
            "hops": [h.as_dict() for h in self.hops],
            "usage": self.usage.as_dict(),
            "question": self.question,
            "covered": self.covered,
            "findings": [f.as_dict() for f in self.findings],
        }


@dataclass(frozen=True)
class Event:
    type: str  # status | delta | done | error
    data: dict[str, Any]  # JSON-ready, for an event stream
    error: KbAiError | None = None  # with type "error": what went wrong, to act on by type
