"""A stand-in model that misbehaves on purpose, over the same real loopback HTTP.

:class:`FaultyModel` is a responder for :class:`FakeOpenAIServer`: requests of the stages
it is told to break are answered with one fault, the others as kb_responder would (valid,
grounded JSON for every kb-ai stage)::

    model = FaultyModel("hang")                       # every request hangs
    model = FaultyModel("escape", stages={"classify"}, times=1)  # once, then well
    model = FaultyModel("mix", seed=7)                # a seeded random mix, "ok" included
    with faulty_server(model) as server:
        ...
    assert model.faults == [("classify", "escape")]

Modes (``MODES``):

- ``ok``: kb_responder's answer.
- ``5xx``: HTTP 503. ``429``: HTTP 429 with ``Retry-After`` (``retry_after``: seconds,
  or an HTTP date).
- ``hang``: never answers (held until the server stops).
- ``drop``: the connection closes halfway through the reply body (or a stream).
- ``bad_envelope``: HTTP 200 whose body is not JSON at all.
- ``invalid_json``: a chat completion whose content is broken JSON.
- ``missing_keys``: content that is a JSON object without the required keys.
- ``cut_off``: half the content, with finish_reason "length".
- ``empty``: valid JSON with nothing in it (classify: no article; write: an empty
  body; extract: every field empty; select: no path; an answer: blank).
- ``escape``: paths that leave the wiki (classify: an update of ``../../etc/passwd``;
  select: ``../../etc/passwd``; other stages: ``ok``).
- ``huge``: the stage's valid reply with one field blown up to ``huge_chars``
  characters (5 MB by default): an extraction's fact, an article's body, an answer.
- ``mix``: one of the above (but ``hang``, unless ``mix_modes`` says) per request,
  drawn from ``random.Random(seed)``, ``ok`` half the time.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Collection, Sequence
from email.utils import formatdate
from typing import Any

from tests.fakes import kb_responder
from tests.fakes.openai_server import FakeOpenAIServer, Reply

MODES = (
    "ok",
    "5xx",
    "429",
    "hang",
    "drop",
    "bad_envelope",
    "invalid_json",
    "missing_keys",
    "cut_off",
    "empty",
    "escape",
    "huge",
)
MIX_MODES = tuple(m for m in MODES if m not in ("ok", "hang"))
ESCAPE = "../../etc/passwd"
HUGE_CHARS = 5_000_000


def http_date(seconds_from_now: float) -> str:
    """An HTTP date (RFC 9110) that many seconds from now, for a Retry-After header."""
    return formatdate(time.time() + seconds_from_now, usegmt=True)


class FaultyModel:
    """A responder that answers with faults; records each fault it made as (stage, mode)."""

    def __init__(
        self,
        mode: str = "ok",
        *,
        stages: Collection[str] | None = None,
        times: int | None = None,
        seed: int = 0,
        retry_after: str = "1",
        huge_chars: int = HUGE_CHARS,
        mix_modes: Sequence[str] = MIX_MODES,
    ) -> None:
        if mode not in (*MODES, "mix"):
            raise ValueError(f"unknown mode {mode!r}; one of {', '.join(MODES)}, mix")
        self.mode = mode
        self.stages = set(stages) if stages is not None else None
        self.times = times
        self.retry_after = retry_after
        self.huge_chars = huge_chars
        self.mix_modes = tuple(mix_modes)
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self.faults: list[tuple[str, str]] = []

    def _choose(self, stage: str) -> str:
        with self._lock:
            if self.stages is not None and stage not in self.stages:
                return "ok"
            if self.times is not None and len(self.faults) >= self.times:
                return "ok"
            mode = self.mode
            if mode == "mix":
                mode = "ok" if self._random.random() < 0.5 else self._random.choice(self.mix_modes)
            if mode != "ok":
                self.faults.append((stage, mode))
            return mode

    def __call__(self, request: dict[str, Any]) -> Reply:
        stage = kb_responder.stage_of(request)
        return self.reply(self._choose(stage), stage, request)

    def reply(self, mode: str, stage: str, request: dict[str, Any]) -> Reply:
        """The reply of ``mode`` to a request of ``stage``."""
        if mode == "5xx":
            return Reply(status=503)
        if mode == "429":
            return Reply(status=429, headers=(("Retry-After", self.retry_after),))
        if mode == "hang":
            return Reply(hang=True)
        if mode == "bad_envelope":
            return Reply(body="<html>502 Bad Gateway</html>")
        good = kb_responder.respond(request)
        if mode == "drop":
            return Reply(good.content, cut_at=max(1, len(good.content) // 8))
        if mode == "invalid_json":
            return Reply('{"title": "Broken", "summary": "never closed", "facts": [')
        if mode == "missing_keys":
            return Reply('{"unexpected": true}')
        if mode == "cut_off":
            return Reply(good.content[: len(good.content) // 2], finish_reason="length")
        if mode == "empty":
            return Reply(_empty(stage, good.content))
        if mode == "escape":
            return Reply(_escaping(stage, good.content))
        if mode == "huge":
            return Reply(_huge(stage, good.content, self.huge_chars))
        return good


def _empty(stage: str, content: str) -> str:
    if stage == "answer":
        return " "
    data = json.loads(content)
    for key, value in data.items():
        data[key] = type(value)()  # "", [], {}
    return json.dumps(data)


def _escaping(stage: str, content: str) -> str:
    if stage == "classify":
        data = json.loads(content)
        for item in data["articles"]:
            item.update(action="update", path=ESCAPE)
        return json.dumps(data)
    if stage == "select":
        return json.dumps({"paths": [ESCAPE, f"wiki/{ESCAPE}"]})
    return content


def _huge(stage: str, content: str, chars: int) -> str:
    blob = ("All work and no play makes a huge reply. " * (chars // 40 + 1))[:chars]
    if stage == "extract":
        data = json.loads(content)
        data["facts"] = [blob, *data.get("facts", [])]
        return json.dumps(data)
    if stage == "write":
        data = json.loads(content)
        data["body"] = blob
        return json.dumps(data)
    if stage == "patch":
        data = json.loads(content)
        data["patches"] = [{"section": "Huge", "op": "add", "content": blob}]
        return json.dumps(data)
    if stage in ("classify", "select", "rewrite"):
        return content + " " * chars  # valid JSON, padded past any sane size
    return blob  # an answer


def faulty_server(model: FaultyModel | str = "ok", **options: Any) -> FakeOpenAIServer:
    """A FakeOpenAIServer answering through ``model`` (a FaultyModel, or a mode for one)."""
    responder = model if isinstance(model, FaultyModel) else FaultyModel(model, **options)
    return FakeOpenAIServer(responder)
