"""Cutting an answer, as it streams, into sentences that can each be checked.

A sentence is released once the text after it has begun, with the citations that
follow it attached ("... at 02:00. [Backups](wiki/howto/backups.md) Then ..." gives
"... at 02:00. [Backups](wiki/howto/backups.md) " and "Then ..."), so a check sees each
claim with its own sources, and a user sees each sentence only after it was checked.
A sentence never ends inside a link, nor at a decimal point ("364.6"), nor inside a code
span, at an ellipsis (`SELECT ... FOR UPDATE`), after an abbreviation ("e.g.", "Dr.")
or an initial ("J. Smith"): each piece is checked, and cited, as a sentence of its own.
"""

from __future__ import annotations

import re

_END = re.compile(r"[.!?](?=\s)|[。！？]|\n")
_LINK = re.compile(r"\[[^\]\n]{1,300}\]\([^)\s]{1,300}\)")
_AFTER_LINK = re.compile(r"[.,;:。，；：]?[ \t]*")
_SPACE = re.compile(r"\s*")
MAX_CHUNK = 1_500  # a "sentence" longer than this is cut at a space
# Words whose stop does not end a sentence (extractive.py cuts pages with the same list).
ABBREVIATIONS = frozenset(
    "e.g i.e etc vs cf approx dr mr mrs ms prof st inc ltd jr sr u.s".split()  # noqa: SIM905
)
_WORD_BEFORE = re.compile(r"([\w.]+)[.!?]$")


def _no_end(text: str) -> bool:
    """Whether a stop at the end of ``text`` does not end a sentence: inside a code span
    (an odd number of backticks before it), an ellipsis, an abbreviation, an initial."""
    if text.count("`") % 2 or text.endswith(("..", "…")):
        return True
    word = _WORD_BEFORE.search(text)
    before = word.group(1).casefold() if word else ""
    return before in ABBREVIATIONS or (len(before) == 1 and before.isalpha())


def _inside_link(text: str) -> bool:
    """Whether ``text`` ends inside an unfinished [title](target)."""
    opened = text.rfind("[")
    if opened > text.rfind("]"):
        return True
    target = text.rfind("](")
    return target >= 0 and text.find(")", target) < 0


class SentenceCutter:
    """Feed streamed text in; get whole sentences (with their citations) out."""

    def __init__(self) -> None:
        self.buffer = ""

    def feed(self, text: str) -> list[str]:
        self.buffer += text
        out: list[str] = []
        while (cut := self._cut()) is not None:
            out.append(self.buffer[:cut])
            self.buffer = self.buffer[cut:]
        return out

    def flush(self) -> list[str]:
        rest, self.buffer = self.buffer, ""
        return [rest] if rest else []

    def _cut(self) -> int | None:
        buf = self.buffer
        for m in _END.finditer(buf):
            if _inside_link(buf[: m.start()]):
                continue
            if m.group() != "\n" and _no_end(buf[: m.end()]):
                continue
            end = self._attach(m.end())
            if end is not None:
                return end
            return None  # the next sentence has not begun: wait for more text
        if len(buf) > MAX_CHUNK:
            space = buf.rfind(" ", 0, MAX_CHUNK)
            while space > 0 and _inside_link(buf[:space]):
                space = buf.rfind(" ", 0, space)
            return space + 1 if space > 0 else MAX_CHUNK
        return None

    def _attach(self, pos: int) -> int | None:
        """The end of the sentence ending at ``pos``, with the citations that follow it
        and the space before the next one; None while that is not known yet."""
        buf = self.buffer
        while True:
            pos = _SPACE.match(buf, pos).end()  # type: ignore[union-attr]
            if pos >= len(buf):
                return None
            if buf[pos] != "[":
                return pos
            link = _LINK.match(buf, pos)
            if link is None:
                unfinished = "\n" not in buf[pos:] and len(buf) - pos < 620
                if unfinished and not re.match(r"\[[^\]\n]*\][^(]", buf[pos:]):
                    return None
                return pos
            pos = _AFTER_LINK.match(buf, link.end()).end()  # type: ignore[union-attr]
