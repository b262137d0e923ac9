"""The normalised transcript every parser produces, and how it is rendered as Markdown.

A transcript is a list of turns (user, assistant, or a note such as a compacted
summary). An assistant turn holds its text and its tool calls; each tool call is one
condensed line (``→ Bash: pytest -x``) with its result cut to the lines that matter
(errors kept, the rest elided). Thinking never gets here: parsers drop it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from compiler.redact import redact

RESULT_HEAD = 2  # lines kept from the start of a long tool result
RESULT_TAIL = 2  # and from its end (test summaries, exit codes live there)
RESULT_ERRORS = 6  # error lines kept from its middle
SHORT_RESULT_LINES = 5  # results this short are kept whole
LINE_CHARS = 240  # any kept line is cut to this
TEXT_CHARS = 6000  # a single message longer than this is cut (pasted logs, reports)

_ERROR_LINE = re.compile(
    r"error|exception|traceback|failed|failure|fatal|panic|denied|not found|no such|"
    r"cannot|can't|unable|refused|timed? ?out|segmentation fault|undefined|abort|"
    r"^E\s|^\s*\^|exit code [1-9]|returned non-zero",
    re.I,
)

_HEADING = re.compile(r"^(#{1,6})\s")

AGENT_NAMES = {
    "claude-code": "Claude Code",
    "codex": "Codex CLI",
    "swe-agent": "SWE-agent",
    "chat": "chat",
}


@dataclass
class ToolCall:
    name: str
    summary: str  # the condensed argument: a command, a path, a pattern
    result: str | None = None
    is_error: bool = False
    quiet: bool = False  # a read-only tool whose successful output is not worth keeping


@dataclass
class Turn:
    role: str  # "user" | "assistant" | "note"
    parts: list[str | ToolCall] = field(default_factory=list)

    def text(self) -> str:
        return "\n\n".join(p for p in self.parts if isinstance(p, str))


@dataclass
class Transcript:
    """One agent session, normalised."""

    agent: str  # claude-code | codex | swe-agent | chat
    title: str = ""
    started_at: str | None = None
    session_id: str | None = None
    turns: list[Turn] = field(default_factory=list)
    redactions: int = 0  # secrets and private spans removed while parsing

    # -- building ------------------------------------------------------------------

    def add(self, role: str, part: str | ToolCall) -> None:
        """Append to the last turn when it has the same role, else start a new one."""
        if isinstance(part, str):
            part = part.strip()
            if not part:
                return
        if self.turns and self.turns[-1].role == role and role != "note":
            self.turns[-1].parts.append(part)
        else:
            self.turns.append(Turn(role, [part]))

    def user_requests(self) -> list[str]:
        return [t.text() for t in self.turns if t.role == "user" and t.text()]

    def is_empty(self) -> bool:
        return not self.user_requests() and not any(t.role == "assistant" for t in self.turns)

    def finish(self, fallback_title: str) -> Transcript:
        """Redact every piece, and title the transcript by its first request."""
        for turn in self.turns:
            for i, part in enumerate(turn.parts):
                if isinstance(part, str):
                    turn.parts[i] = self._redact(part)
                else:
                    part.summary = self._redact(part.summary)
                    if part.result is not None:
                        part.result = self._redact(part.result)
        if not self.title:
            requests = self.user_requests()
            self.title = shorten(requests[0], 80) if requests else fallback_title
        return self

    def _redact(self, text: str) -> str:
        clean, n = redact(text)
        self.redactions += n
        return clean

    # -- rendering -----------------------------------------------------------------

    def to_text(self) -> str:
        """The transcript as readable Markdown: who asked what, what the agent did."""
        name = AGENT_NAMES.get(self.agent, self.agent)
        head = f"# {self.title}\n\n*Transcript of a {name} session"
        if self.started_at:
            head += f", started {self.started_at}"
        out = [head + ".*"]
        for turn in self.turns:
            if turn.role == "note":
                out.append(turn.text())
                continue
            out.append("## User" if turn.role == "user" else "## Assistant")
            for part in turn.parts:
                out.append(_demote(cut_text(part)) if isinstance(part, str) else render_call(part))
        return "\n\n".join(out).strip() + "\n"


def _demote(text: str) -> str:
    """Headings inside a message go below the turn's own ``## User`` / ``## Assistant``."""
    if "#" not in text:
        return text
    out, fenced = [], False
    for line in text.split("\n"):
        if line.startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and (m := _HEADING.match(line)):
            line = "#" * min(6, len(m.group(1)) + 2) + line[len(m.group(1)) :]
        out.append(line)
    return "\n".join(out)


def render_call(call: ToolCall) -> str:
    line = f"→ {call.name}: {call.summary}" if call.summary else f"→ {call.name}"
    result = condense_result(call.result or "", is_error=call.is_error, quiet=call.quiet)
    if not result:
        return line
    fence = "```"
    while fence in result:
        fence += "`"
    label = "error" if call.is_error else "output"
    return f"{line}\n{label}:\n{fence}\n{result}\n{fence}"


def condense_result(text: str, *, is_error: bool = False, quiet: bool = False) -> str:
    """A tool result cut to what a reader needs: short ones whole; long ones their first
    and last lines and every error line between, with the rest counted, not shown."""
    lines = [ln.rstrip() for ln in text.strip("\n").splitlines()]
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        return ""
    if quiet and not is_error:
        return ""  # a file read or a listing that worked: the call line says enough
    errors = [i for i, ln in enumerate(lines) if _ERROR_LINE.search(ln)]
    if len(lines) <= SHORT_RESULT_LINES:
        return "\n".join(_cut_line(ln) for ln in lines)
    keep = set(range(min(RESULT_HEAD, len(lines))))
    keep |= set(range(max(0, len(lines) - RESULT_TAIL), len(lines)))
    # the last error lines matter most: a traceback ends with the exception
    keep |= set(errors[-RESULT_ERRORS:])
    out: list[str] = []
    skipped = 0
    for i, ln in enumerate(lines):
        if i in keep:
            if skipped:
                out.append(f"… ({skipped} lines elided)")
                skipped = 0
            out.append(_cut_line(ln))
        else:
            skipped += 1
    if skipped:
        out.append(f"… ({skipped} lines elided)")
    return "\n".join(out)


def _cut_line(line: str) -> str:
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"


def cut_text(text: str, limit: int = TEXT_CHARS) -> str:
    if len(text) <= limit:
        return text
    head = text[: limit * 2 // 3]
    tail = text[-limit // 3 :]
    return f"{head}\n… ({len(text) - len(head) - len(tail):,} characters elided)\n{tail}"


def shorten(text: str, limit: int) -> str:
    """The first line of ``text``, cut at a word boundary to at most ``limit`` chars."""
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    first = re.sub(r"[*_`#>]+", "", first).strip()
    first = " ".join(first.split())
    if len(first) <= limit:
        return first
    cut = first[: limit - 1].rsplit(" ", 1)[0]
    return (cut or first[: limit - 1]).rstrip(",.;:") + "…"


def one_line(text: str, limit: int = 160) -> str:
    """A command or argument as one line: first line, collapsed, cut."""
    lines = [ln for ln in str(text).strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    first = " ".join(lines[0].split())
    more = len(lines) - 1
    if len(first) > limit:
        first = first[: limit - 1] + "…"
    return f"{first} (+{more} lines)" if more else first
