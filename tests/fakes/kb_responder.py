"""A deterministic stand-in for a model that plays kb-ai's stages.

It reads the request the way a model would (the schema asked for tells the stage, the
prompt carries the material) and answers with valid, grounded JSON built from the text
it was given, so end-to-end tests and benchmarks run the real pipeline over real HTTP
without a real model. Behaviour a test needs to break is scripted with
FakeOpenAIServer.queue(...) instead.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from tests.fakes.openai_server import Reply

_WORD = re.compile(r"[^\W\d_]{4,}", re.UNICODE)
_STOP = set(
    [
        "this",
        "that",
        "with",
        "from",
        "have",
        "were",
        "will",
        "what",
        "when",
        "which",
        "their",
        "there",
        "they",
        "them",
        "into",
        "about",
        "also",
        "been",
        "more",
        "than",
        "only",
        "other",
        "some",
        "such",
        "then",
        "these",
        "those",
        "would",
        "could",
        "should",
        "after",
        "before",
        "because",
        "while",
        "where",
        "must",
        "each",
        "over",
        "under",
        "very",
        "most",
        "much",
        "many",
        "just",
        "like",
    ]
)


def schema_of(request: dict[str, Any]) -> dict[str, Any]:
    """The JSON schema the request asks for, whatever structured-output mode was used."""
    fmt = request.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return fmt.get("json_schema", {}).get("schema", {})
    if fmt.get("schema"):
        return fmt["schema"]
    for message in request.get("messages", []):
        content = message.get("content") or ""
        start = content.find('{"type": "object"')
        if start < 0:
            start = content.find('{"type":"object"')
        if start >= 0:
            try:
                return json.JSONDecoder().raw_decode(content[start:])[0]
            except json.JSONDecodeError:
                continue
    return {}


def stage_of(request: dict[str, Any]) -> str:
    props = schema_of(request).get("properties", {})
    for key, stage in (
        ("decisions", "extract"),
        ("articles", "classify"),
        ("patches", "patch"),
        ("body", "write"),
        ("paths", "select"),
        ("question", "rewrite"),
        ("issues", "lint"),
        ("enough", "follow"),
        ("sentence", "judge"),
        ("type", "name"),
    ):
        if key in props:
            return stage
    return "answer"


def _user(request: dict[str, Any]) -> str:
    users = [m.get("content") or "" for m in request.get("messages", []) if m.get("role") == "user"]
    return users[-1] if users else ""


def _between(text: str, tag: str) -> list[str]:
    return re.findall(rf"<{tag}>\n?(.*?)\n?</{tag}>", text, re.S)


def _sentences(text: str) -> list[str]:
    plain = re.sub(r"^#+\s.*$", "", text, flags=re.M)
    plain = re.sub(r"[*_`>|]", "", plain)
    parts = re.split(r"(?<=[.!?])\s+|\n\s*\n", plain)
    return [" ".join(p.split()) for p in parts if len(p.split()) >= 4]


def _topics(text: str, n: int = 4) -> list[str]:
    words = [w.lower() for w in _WORD.findall(text) if w.lower() not in _STOP]
    return [w for w, _ in Counter(words).most_common(n)]


def extract(request: dict[str, Any]) -> dict[str, Any]:
    user = _user(request)
    title_m = re.search(r"^Source: (.+?) \(", user, re.M)
    title = title_m.group(1) if title_m else "Untitled"
    text = "\n".join(_between(user, "source"))
    sentences = _sentences(text)
    decisions = [
        {"what": s[:300], "why": "", "who": ""}
        for s in sentences
        if re.search(r"\b(decid|decision|we will|agreed|chose)", s, re.I)
    ][:5]
    items = re.findall(r"^\s*(?:[-*]|\d+\.)\s+(.+)$", text, re.M)
    return {
        "title": title,
        "summary": (sentences[0] if sentences else title)[:400],
        "topics": _topics(text),
        "concepts": [
            {"name": title[:80], "description": (sentences[0] if sentences else title)[:400]}
        ],
        "entities": [],
        "decisions": decisions,
        # each fact with what it is about (the source's title) and the date it states
        "facts": [{"fact": s[:400], "about": title[:80], "held": _held(s)} for s in sentences[1:9]],
        "enumerations": [{"name": "items", "items": [i[:200] for i in items[:40]]}]
        if items
        else [],
        "action_items": [],
        **(
            _transcript_fields(text)
            if "pitfalls" in schema_of(request).get("properties", {})
            else {}
        ),
    }


def _held(sentence: str) -> str:
    """The first ISO date or month a sentence states: when its fact held."""
    m = re.search(r"(?<!\d)\d{4}-(?:0[1-9]|1[0-2])(?:-(?:0[1-9]|[12]\d|3[01]))?(?!\d)", sentence)
    return m.group() if m else ""


def _transcript_fields(text: str) -> dict[str, Any]:
    """What a model would find in a normalised transcript: the user's rules, each error
    with the next command that ran, and stated conventions."""
    users = re.findall(r"^## User\n\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    corrections = [
        {"rule": " ".join(s.split())[:300], "why": ""}
        for turn in users
        for s in re.split(r"(?<=[.!?])\s+|\n", turn)
        if re.search(r"\b(always|never|don't|do not|must)\b", s, re.I)
    ][:12]
    pitfalls = []
    calls = re.findall(r"^→ (.+?)$\n?(error:\n`{3,}\n(.*?)\n`{3,})?", text, re.S | re.M)
    for i, (_call, block, error) in enumerate(calls):
        if block and i + 1 < len(calls):
            fix = calls[i + 1][0]
            pitfalls.append(
                {
                    "error": error.strip().splitlines()[-1][:300],
                    "cause": "",
                    "fix": f"ran {fix}"[:400],
                    "command_or_file": fix.split(": ", 1)[-1][:200],
                }
            )
    conventions = [
        s[:300]
        for s in _sentences(text)
        if re.search(r"\b(convention|we use|we always|by convention)\b", s, re.I)
    ][:12]
    return {"corrections": corrections, "pitfalls": pitfalls[:10], "conventions": conventions}


def classify(request: dict[str, Any]) -> dict[str, Any]:
    user = _user(request)
    schema = schema_of(request)
    action_props = schema["properties"]["articles"]["items"]["properties"]
    types = action_props["type"].get("enum") or ["concept"]
    title_m = re.search(r"^New material, from (.+?):$", user, re.M)
    title = title_m.group(1).strip() if title_m else "Untitled"
    for line_title, path in re.findall(r"^- \[(.+?)\]\((wiki/[^)]+)\)", user, re.M):
        if line_title.strip().lower() == title.lower():
            return {
                "articles": [
                    {
                        "action": "update",
                        "path": path,
                        "type": path.split("/")[1],
                        "title": line_title,
                        "reason": "same subject",
                    }
                ]
            }
    kind = (
        "decision"
        if "decision" in types and re.search(r"decision|\badr\b|decid", user, re.I)
        else types[0]
    )
    return {
        "articles": [
            {"action": "create", "path": "", "type": kind, "title": title, "reason": "new subject"}
        ]
    }


def _material_sections(user: str) -> list[tuple[str, str]]:
    """(source, material) of the prompt; a person's lines (from a hand edit) left out:
    the prompt says they are in the article already, never to be repeated."""
    sources = re.findall(r"^Material from (\S+?)(?::| \(|$)", user, re.M)
    sections = zip(sources, _between(user, "material"), strict=False)
    return [(s, t) for s, t in sections if s != "edit" and not s.startswith("edit:")]


def _dated_sections(user: str) -> dict[str, str]:
    """source -> when its material's facts held: the newest date its facts carry
    ("(held ...)", the prompt's rule: a fact's own date first), else the date its
    material header says the source states ("dated ...")."""
    dates = dict(re.findall(r"^Material from (\S+?) \(dated ([\d-]+)\)", user, re.M))
    for source, text in _material_sections(user):
        held = re.findall(r"\(held ([\d-]+)\)$", text, re.M)
        if source in dates and held:
            dates[source] = max(held)
    return dates


def _summary_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0][len("Summary: ") :] if lines and lines[0].startswith("Summary: ") else ""


def _dated_body(sections: list[tuple[str, str]], dates: dict[str, str]) -> str:
    """What the write prompt's rules ask for dated material that disagrees: the newest
    current, older ones in dated history lines, same-date disagreement as a conflict."""
    ordered = sorted(sections, key=lambda st: dates[st[0]], reverse=True)
    newest = dates[ordered[0][0]]
    same = [(s, t) for s, t in ordered if dates[s] == newest]
    parts = []
    if len({_summary_line(t) for _, t in same}) > 1:
        said = "; ".join(f"{s} says {_summary_line(t)}" for s, t in same)
        parts.append(f"Conflict ({newest}): {said}")
    else:
        source, text = same[0]
        parts.append(f"## Current (from {source}, dated {newest})\n\n{text.strip()}")
    older = [(s, t) for s, t in ordered if dates[s] != newest]
    if older:
        lines = []
        later = newest
        for source, text in older:
            lines.append(f"- Until {later}: {_summary_line(text)} ({source})")
            later = dates[source]
        parts.append("## History\n\n" + "\n".join(lines))
    return "\n\n".join(parts)


def write(request: dict[str, Any]) -> dict[str, Any]:
    user = _user(request)
    existing = _between(user, "article")
    body = existing[0].strip() if existing else ""
    summary = ""
    sections = _material_sections(user)
    dates = _dated_sections(user)
    dated = [(s, t) for s, t in sections if s in dates]
    if len(dated) > 1 and not existing:
        body = _dated_body(dated, dates)
        summary = _summary_line(max(dated, key=lambda st: dates[st[0]])[1])
        sections = [(s, t) for s, t in sections if s not in dates]
    for source, text in sections:
        lines = text.strip().splitlines()
        if lines and lines[0].startswith("Summary: "):
            summary = summary or lines[0][len("Summary: ") :]
        section = f"## From {source}\n\n{text.strip()}"
        # what a source said before is replaced by what it says now, not said twice
        earlier = re.compile(rf"^## From {re.escape(source)}\n.*?(?=^## |\Z)", re.S | re.M)
        if earlier.search(body):
            body = earlier.sub(lambda _, new=section: new + "\n\n", body).strip()
        else:
            body = f"{body}\n\n{section}".strip()
    # Within the schema's bound, as a model under constrained decoding stays (kb-ai refuses
    # a body far past it): cut at the last line that fits.
    limit = schema_of(request)["properties"]["body"].get("maxLength") or len(body)
    if len(body) > limit:  # a shorter article, ending on a sentence, as the checks require
        cut = body[: limit - 500]
        body = cut[: max(cut.rfind(". "), cut.rfind(".\n")) + 1].rstrip() or cut
    return {"title": "", "summary": summary[:200], "tags": _topics(body, 3), "body": body}


def patch(request: dict[str, Any]) -> dict[str, Any]:
    user = _user(request)
    patches = [
        {"section": f"From {source}", "op": "add", "content": text.strip()[:8000]}
        for source, text in _material_sections(user)
    ]
    return {"summary": "", "tags": [], "patches": patches[:8]}


def select(request: dict[str, Any]) -> dict[str, Any]:
    """Pick the catalog lines that share the most words with the question."""
    user = _user(request)
    q = re.search(r"^Question: (.+)$", user, re.M)
    words = set(_WORD.findall((q.group(1) if q else user).lower()))
    scored = []
    for path, line in re.findall(r"^- \[.+?\]\(((?:also/[^/)]+/)?wiki/[^)]+)\)(.*)$", user, re.M):
        overlap = len(words & set(_WORD.findall(line.lower())))
        if overlap:
            scored.append((-overlap, path))
    return {"paths": [p for _, p in sorted(scored)[:3]]}


def rewrite(request: dict[str, Any]) -> dict[str, Any]:
    """Make a follow-up standalone by carrying the earlier question's subject along."""
    user = _user(request)
    latest = re.search(r"^Latest question: (.+)$", user, re.M)
    earlier = re.findall(r"^user: (.+)$", user, re.M)
    question = latest.group(1) if latest else ""
    if earlier:
        question = f"{question} (regarding: {earlier[-1]})"
    return {"question": question}


def answer(request: dict[str, Any]) -> str:
    """Cite the page that shares the most words with the question, quoting its first fact;
    over a corpus read whole, a synthesis: the first fact of every page that shares a
    word with the question, each citing its own page."""
    user = _user(request)
    q = re.search(r"^Question: (.+)$", user, re.M)
    words = set(_WORD.findall((q.group(1) if q else "").lower())) - _STOP
    pages = re.findall(r'<page title="(.*?)" path="(.*?)">\n(.*?)\n</page>', user, re.S)
    system = " ".join(m.get("content") or "" for m in request.get("messages", [])[:1])
    if "the whole of the corpus" in system:
        points = [
            f"- {said[0]} [{title}]({path})"
            for title, path, text in pages
            if (said := [x for x in _sentences(text) if words & set(_WORD.findall(x.lower()))])
        ]
        return "\n".join(points) or "The wiki does not cover this question."
    best = None
    for title, path, text in pages:
        overlap = len(words & set(_WORD.findall(text.lower())))
        if overlap >= 2 and (best is None or overlap > best[0]):
            best = (overlap, title, path, text)
    if best is None:
        return "The wiki does not cover this question."
    _, title, path, text = best
    facts = _sentences(text)
    fact = facts[0] if facts else text.strip().splitlines()[0]
    return f"{fact} [{title}]({path})"


def judge(request: dict[str, Any]) -> dict[str, Any]:
    """The coverage judge (retrieval/judge.py): the first numbered sentence holding half
    the question's words or more answers, with its first words the question lacks."""
    user = _user(request)
    q = re.search(r"^Question: (.+)$", user, re.M)
    words = set(_WORD.findall((q.group(1) if q else "").lower())) - _STOP
    for n, text in re.findall(r'^(\d+)\. \(from ".*?"\) (.+)$', user, re.M):
        have = set(_WORD.findall(text.lower()))
        if words and len(words & have) * 2 >= len(words):
            found = list(re.finditer(r"[\w'-]+", text))
            new = (
                i
                for i, m in enumerate(found)
                if _WORD.fullmatch(m.group()) and m.group().lower() not in words | _STOP
            )
            first = next(new, 0)
            run = found[first : first + 3]
            return {"answer": text[run[0].start() : run[-1].end()] if run else "", "sentence": n}
    return {"answer": "none", "sentence": "none"}


def lint(request: dict[str, Any]) -> dict[str, Any]:
    """`lint --deep`: a sentence of an article with a number its source material lacks."""
    issues = []
    for block in _user(request).split("=== Article ")[1:]:
        head, _, rest = block.partition("\n")
        body, _, material = rest.partition("--- Its source material")
        path = head.split(" ", 1)[0]
        for sentence in _sentences(body):
            numbers = re.findall(r"\d+", sentence)
            if material.strip() and any(n not in material for n in numbers):
                why = "the source material does not state this number"
                issues.append(
                    {"kind": "unsupported", "paths": [path], "statement": sentence, "why": why}
                )
    return {"issues": issues}


def name(request: dict[str, Any]) -> dict[str, Any]:
    """A small model naming a note (compiler/source_article.py): its first sentence as
    the summary, a decision when it says so, a few frequent words as topics."""
    text = "\n".join(_between(_user(request), "note"))
    sentences = _sentences(text)
    types = schema_of(request)["properties"]["type"]["enum"]
    kind = "decision" if "decision" in types and re.search(r"(?i)\bdecided\b", text) else types[0]
    title = " ".join((sentences[0] if sentences else "Untitled").split()[:6])
    return {
        "title": title,
        "summary": sentences[0] if sentences else "",
        "type": kind,
        "topics": _topics(text, 3),
    }


def pick(request: dict[str, Any]) -> dict[str, Any]:
    """A small model answering extractively (retrieval/extractive.py): of the numbered
    sentences offered, the one or two sharing the most words (two at least) with the
    question, best first; none when no sentence does."""
    user = _user(request)
    q = re.search(r"^Question: (.+)$", user, re.M)
    words = set(_WORD.findall((q.group(1) if q else "").lower())) - _STOP
    offered = re.findall(r'^(s\d+) \(".*?"\): (.+)$', user, re.M)
    scored = [
        (len(words & set(_WORD.findall(text.lower()))), i, sid)
        for i, (sid, text) in enumerate(offered)
    ]
    best = sorted((s for s in scored if s[0] >= 2), key=lambda s: (-s[0], s[1]))
    return {"sentences": [sid for *_, sid in best[:2]]}


HANDLERS = {
    "name": name,
    "extract": extract,
    "classify": classify,
    "write": write,
    "patch": patch,
    "select": select,
    "rewrite": rewrite,
    "lint": lint,
    "judge": judge,
    "follow": lambda request: {"enough": True, "search": []},
}


def respond(request: dict[str, Any]) -> Reply:
    stage = stage_of(request)
    if stage == "answer" and "sentences" in schema_of(request).get("properties", {}):
        return Reply(json.dumps(pick(request)))  # a small model's answer: sentence ids
    handler = HANDLERS.get(stage)
    if handler is None:
        return Reply(answer(request))
    return Reply(json.dumps(handler(request), ensure_ascii=False))
