"""A deliberately faulty stand-in model: kb_responder's replies, spoiled on purpose.

Each reply of a stage is spoiled with probability ``rate`` by one fault of that stage,
chosen at random among those that apply to it. The draw depends only on the seed and
the request (a hash of its messages), never on the order calls arrive in, so a run is
repeatable at any concurrency; a second attempt (its prompt carries the findings) is a
new draw, as a real model's second reply is.

Each spoiled reply is recorded with what would show that it reached the wiki (a
marker), for bench.quality.run to look for afterwards.
"""

from __future__ import annotations

import hashlib
import html
import json
import random
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from tests.fakes import kb_responder
from tests.fakes.openai_server import Reply

WRITE_FAULTS = (
    "repetition",
    "html",
    "pasted_summary",
    "cut_text",
    "unknown_number",
    "outside_name",
    "cut_summary",
)
CLASSIFY_FAULTS = ("empty_path_update", "generic_articles")
EXTRACT_FAULTS = ("cut_list", "cut_facts", "negation_flip", "unknown_number_extract")
#: The faults a mechanical check must catch every time (issue 13's target 1.0).
MECHANICAL = ("repetition", "html", "pasted_summary", "cut_text", "unknown_number")

_SURNAME_TEXT = "Brackenbury Quillfeather Ottershaw Pennywhistle Thistlewood Gravesend"
_FIRST_TEXT = "Ottoline Barnaby Wilhelmina Peregrine Clementine Ambrose"
_SURNAMES, _FIRST = _SURNAME_TEXT.split(), _FIRST_TEXT.split()
_LIST_LINE = re.compile(r"^\s*(?:[-*]|\d+\.)\s+(.+?)\s*$")
_NEGATED = re.compile(r"(?:(?<=[.!?]\s)|(?<=^))[A-Z][^.\n]*\bnot\b[^.\n]*\.", re.M)


@dataclass
class Fault:
    """One spoiled reply: its kind, the source or article it was for, and its marker."""

    kind: str
    stage: str
    title: str  # the article's title (write), the source's title (extract, classify)
    marker: dict[str, Any] = field(default_factory=dict)


class FaultyResponder:
    """kb_responder with faults at ``rate`` per reply (a callable for FakeOpenAIServer)."""

    def __init__(self, rate: float, seed: int, kinds: tuple[str, ...] | None = None) -> None:
        self.rate = rate
        self.seed = seed
        self.kinds = kinds
        self.faults: list[Fault] = []
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply:
        reply = kb_responder.respond(request)
        stage = kb_responder.stage_of(request)
        with self._lock:
            self.calls += 1
        if stage not in ("extract", "classify", "write") or self.rate <= 0:
            return reply
        rng = random.Random(self._key(request))
        if rng.random() >= self.rate:
            return reply
        data = json.loads(reply.content)
        user = _user(request)
        spoil = {"extract": self._extract, "classify": self._classify, "write": self._write}
        fault = spoil[stage](rng, data, user, kb_responder.schema_of(request))
        if fault is None:
            return reply
        with self._lock:
            self.faults.append(fault)
        return Reply(json.dumps(data, ensure_ascii=False))

    def _key(self, request: dict[str, Any]) -> str:
        text = json.dumps(request.get("messages", []), sort_keys=True, ensure_ascii=False)
        return f"{self.seed}:" + hashlib.sha256(text.encode()).hexdigest()

    def _pick(self, rng: random.Random, kinds: tuple[str, ...]) -> str | None:
        allowed = [k for k in kinds if self.kinds is None or k in self.kinds]
        return rng.choice(allowed) if allowed else None

    # -- write ---------------------------------------------------------------------

    def _write(self, rng: random.Random, data: dict, user: str, schema: dict) -> Fault | None:
        if "body" not in data:  # a patch reply: left alone
            return None
        kind = self._pick(rng, WRITE_FAULTS)
        title_m = re.search(r"^Title: (.+)$", user, re.M)
        title = title_m.group(1).strip() if title_m else ""
        body, summary = data["body"], data.get("summary") or ""
        paragraphs = [p for p in body.split("\n\n") if p.strip() and not p.startswith("#")]
        first = paragraphs[0] if paragraphs else body
        fault = Fault(kind or "", "write", title)
        if kind == "repetition":
            data["body"] = ("\n\n".join([first] * 200))[:3000]
            fault.marker = {"repeated": first[:100]}  # (a long paragraph fits twice only cut)
        elif kind == "html":
            blocks = "".join(f"<p>{html.escape(p)}</p>" for p in body.split("\n\n") if p.strip())
            data["body"] = f"<markdown>{blocks}</markdown>"
        elif kind == "pasted_summary":
            pasted = summary or first
            data["body"] = "\n\n".join([pasted] * 15)
            fault.marker = {"pasted": pasted}
        elif kind == "cut_text":
            tail = "The migration will then be completed by the platform te"
            data["body"] = f"{body}\n\n{tail}"
            fault.marker = {"tail": tail}
        elif kind == "unknown_number":
            n = rng.randrange(10_000, 9_999_999)
            data["body"] = body.replace(first, f"{first} The estimated cost was {n:,} pounds.", 1)
            fault.marker = {"number": f"{n:,}"}
        elif kind == "outside_name":
            name = f"{rng.choice(_FIRST)} {rng.choice(_SURNAMES)}"
            data["body"] = body.replace(first, f"{first} It was first proposed by {name}.", 1)
            fault.marker = {"name": name}
        elif kind == "cut_summary":
            text = summary or first
            cut = text[: max(12, len(text) * 2 // 3)].rstrip()
            cut = cut if cut[-1].isalnum() else cut + "th"
            data["summary"] = cut
            fault.marker = {"summary": cut}
        else:
            return None
        return fault

    # -- classify ------------------------------------------------------------------

    def _classify(self, rng: random.Random, data: dict, user: str, schema: dict) -> Fault | None:
        kind = self._pick(rng, CLASSIFY_FAULTS)
        title_m = re.search(r"^New material, from (.+?):$", user, re.M)
        title = title_m.group(1).strip() if title_m else ""
        first = data["articles"][0]
        if kind == "empty_path_update":
            data["articles"] = [{**first, "action": "update", "path": ""}]
            return Fault(kind, "classify", title)
        if kind == "generic_articles":
            topics_m = re.search(r"^Topics: (.+)$", user, re.M)
            topics = [t.strip() for t in (topics_m.group(1) if topics_m else "").split(",")]
            words = [t.upper() if len(t) <= 3 else t.title() for t in topics if t][:4]
            if len(words) < 2:
                return None
            kinds = schema["properties"]["articles"]["items"]["properties"]["type"]["enum"]
            data["articles"] = [
                {"action": "create", "path": "", "type": kinds[0], "title": w, "reason": ""}
                for w in words
            ]
            return Fault(kind, "classify", title, {"generic": words})
        return None

    # -- extract -------------------------------------------------------------------

    def _extract(self, rng: random.Random, data: dict, user: str, schema: dict) -> Fault | None:
        source = "\n".join(re.findall(r"<source>\n?(.*?)\n?</source>", user, re.S))
        title = data.get("title") or ""
        lists = _lists(source)
        flat_source = " ".join(source.split())
        negated = [
            s
            for m in _NEGATED.finditer(source)
            if " not " in (s := " ".join(m.group(0).split()))
            and len(s.split()) >= 5
            and len(s) < 300
            and _flipped(s) not in flat_source  # a flip the source itself says is no fault
        ]
        applicable = [
            k
            for k in EXTRACT_FAULTS
            if (k != "cut_list" or any(len(lst) > 5 for lst in lists))
            and (k != "cut_facts" or any(re.search(r"\d", _fact(f)) for f in data["facts"][5:]))
            and (k != "negation_flip" or negated)
        ]
        kind = self._pick(rng, tuple(applicable))
        if kind == "cut_list":
            whole = next(lst for lst in lists if len(lst) > 5)
            data["enumerations"] = [{"name": "items", "items": whole[:5]}]
            return Fault(kind, "extract", title, {"missing": whole[5:]})
        if kind == "cut_facts":  # the 5-item grammar bound that lost a railway's numbers
            lost = [_fact(f) for f in data["facts"][5:] if re.search(r"\d", _fact(f))]
            data["facts"] = data["facts"][:5]
            return Fault(kind, "extract", title, {"lost": lost})
        if kind == "negation_flip":
            sentence = rng.choice(negated)
            flipped = _flipped(sentence)
            data["summary"] = flipped
            return Fault(kind, "extract", title, {"flipped": flipped})
        if kind == "unknown_number_extract":
            n = rng.randrange(10_000, 9_999_999)
            data["facts"] = [*data.get("facts", []), f"The system served {n:,} requests a day."]
            return Fault(kind, "extract", title, {"number": f"{n:,}"})
        return None


def _fact(item: object) -> str:
    """A fact of an extraction reply: its text ({fact, about, held}, or a bare string)."""
    return str(item["fact"]) if isinstance(item, dict) else str(item)


def _flipped(sentence: str) -> str:
    return " ".join(sentence.replace(" not ", " ", 1).split())


def _user(request: dict[str, Any]) -> str:
    users = [m.get("content") or "" for m in request.get("messages", []) if m.get("role") == "user"]
    return users[-1] if users else ""


def _lists(source: str) -> list[list[str]]:
    """The source's Markdown lists (consecutive list lines), as item texts."""
    out: list[list[str]] = []
    current: list[str] = []
    for line in source.splitlines():
        m = _LIST_LINE.match(line)
        if m and not line.startswith((" ", "\t")):
            current.append(m.group(1))
        elif line.strip() and not line.startswith((" ", "\t")):
            if current:
                out.append(current)
            current = []
    if current:
        out.append(current)
    return out
