"""What asking a question gives back: the turns of a chat, the events of an answer as
it happens (Status, Note, Delta, then Done or Error), and the answer itself.

They stay typed objects up to the edge that shows them; ``as_dict`` is for that edge
(the CLI's --json, the web app's event stream, MCP's structured content)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from kb_ai.errors import KbAiError
from kb_ai.llm import Usage
from retrieval.checks import Finding
from retrieval.follow import Hop
from retrieval.pages import Citation
from retrieval.places import ClaimSpan, faithfulness

__all__ = ["Answer", "AskEvent", "Delta", "Done", "Error", "Note", "Status", "Turn"]


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
    see_also: list[Citation] = field(default_factory=list)  # nearby pages of one not covered
    # the corpus asked (retrieval/scope.py): its name, read_whole, articles; None: the wiki
    corpus: dict[str, Any] | None = None
    claims: list[ClaimSpan] = field(default_factory=list)  # each cited claim and its span

    @property
    def faithfulness(self) -> float | None:
        """The share of cited claims whose cited span supports them (places.py)."""
        return faithfulness(self.claims)

    @property
    def checked(self) -> str:
        """The citation-faithfulness check in words, for a reader under the answer: how
        many cited claims their lines support, and where one is not ("" with none cited)."""
        if not self.claims:
            return ""
        held = sum(c.supported for c in self.claims)
        line = f"Cited claims: {held} of {len(self.claims)} supported by the lines they cite"
        lacking = [c for c in self.claims if not c.supported]
        if not lacking:
            return line + "."
        first = lacking[0]
        place = first.path + (first.span.anchor if first.span else "")
        claim = first.claim if len(first.claim) <= 80 else first.claim[:77].rstrip() + "..."
        more = f" (and {len(lacking) - 1} more)" if len(lacking) > 1 else ""
        return f'{line}; not supported: "{claim}" ({place}: {first.why}){more}.'

    def as_dict(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "citations": [c.as_dict() for c in self.citations],
            "read": self.read,
            "hops": [h.as_dict() for h in self.hops],
            "usage": self.usage.as_dict(),
            "question": self.question,
            "covered": self.covered,
            "see_also": [c.as_dict() for c in self.see_also],
            "findings": [f.as_dict() for f in self.findings],
            "claims": [c.as_dict() for c in self.claims],
            "faithfulness": self.faithfulness,
            "corpus": self.corpus,
        }


@dataclass(frozen=True)
class Status:
    """What the answer is doing: rewriting, selecting, reading (``paths``, and the
    follow-up's ``query``), judging (whether a sentence read answers, judge.py),
    choosing (among ``sentences``), answering."""

    type: ClassVar[str] = "status"
    stage: str
    paths: list[str] | None = None
    query: str | None = None
    sentences: int | None = None

    def as_dict(self) -> dict[str, Any]:
        extra = {"paths": self.paths, "query": self.query, "sentences": self.sentences}
        return {"stage": self.stage, **{k: v for k, v in extra.items() if v is not None}}


@dataclass(frozen=True)
class Note:
    """Something the reader should know beside the answer (a compile under way)."""

    type: ClassVar[str] = "note"
    text: str

    def as_dict(self) -> dict[str, Any]:
        return {"text": self.text}


@dataclass(frozen=True)
class Delta:
    """The next piece of the answer, checked before it is shown."""

    type: ClassVar[str] = "delta"
    text: str

    def as_dict(self) -> dict[str, Any]:
        return {"text": self.text}


@dataclass(frozen=True)
class Done:
    """The answer, complete: the last event of a question that was answered."""

    type: ClassVar[str] = "done"
    answer: Answer

    def as_dict(self) -> dict[str, Any]:
        return self.answer.as_dict()


@dataclass(frozen=True)
class Error:
    """Why the question was not answered: the last event of one that failed, with the
    model use it cost so far. Edges show it in kb-ai's one error shape."""

    type: ClassVar[str] = "error"
    error: KbAiError
    usage: Usage = field(default_factory=Usage)


AskEvent = Status | Note | Delta | Done | Error
