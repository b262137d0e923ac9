"""A team's golden questions: a YAML or JSON file of questions, each with the facts a
right answer states or ``not covered`` when the wiki must decline it.

    questions:
      - question: How often do workers poll the jobs table?
        expect: [2 seconds]
      - question: Who is the on-call engineer for the payments service?
        expect: not covered

(A bare list of such entries is read too; ``id`` optionally names one.) A file of the
wrong shape is refused with the line of the first thing wrong and what was expected
there, before any question is asked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from kb_ai.errors import NotFoundError, UsageError
from retrieval.ask import check_question

__all__ = ["MAX_GOLDEN_BYTES", "GoldenFileError", "GoldenQuestion", "load_golden", "parse_golden"]

MAX_GOLDEN_BYTES = 5_000_000
MAX_QUESTIONS = 10_000
NOT_COVERED = "not covered"
KEYS = ("question", "expect", "id")
SHAPE = (
    "each entry is a mapping with `question` (text) and `expect` (a list of facts the "
    "answer states, or `not covered`)"
)


class GoldenFileError(UsageError):
    """A golden-questions file that cannot be read or has the wrong shape."""


@dataclass(frozen=True)
class GoldenQuestion:
    question: str
    facts: tuple[str, ...]  # empty: the wiki must not cover it
    line: int  # where it is in the file (1-based)
    id: str = ""

    @property
    def covered(self) -> bool:
        return bool(self.facts)

    @property
    def expect(self) -> list[str] | str:
        return list(self.facts) if self.facts else NOT_COVERED


def load_golden(path: str | Path) -> list[GoldenQuestion]:
    """The questions of the file at ``path`` (.json as JSON, anything else as YAML)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise GoldenFileError(f"{path} is not a file", hint="name a .yaml or .json file")
        if size > MAX_GOLDEN_BYTES:
            raise GoldenFileError(
                f"{path} is {size:,} bytes, over the {MAX_GOLDEN_BYTES:,} a golden file may be",
                hint="split it, or run a part of it with --sample N",
            )
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise NotFoundError(
            f"No file {path}", hint="e.g. kb-ai eval examples/notes-golden.yaml"
        ) from exc
    except OSError as exc:
        raise GoldenFileError(f"{path} cannot be read: {exc.strerror}") from exc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise GoldenFileError(
            f"{path} line {line}: not UTF-8 text", hint="save the file as UTF-8"
        ) from exc
    return parse_golden(text, str(path), as_json=path.suffix.lower() == ".json")


def parse_golden(
    text: str, where: str = "the file", *, as_json: bool = False
) -> list[GoldenQuestion]:
    """The questions of ``text``; GoldenFileError naming the line of what is wrong."""
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise GoldenFileError(f"{where} line {line}: a binary file, not YAML or JSON")
    if as_json:
        try:
            json.loads(text)
        except json.JSONDecodeError as exc:
            raise GoldenFileError(f"{where} line {exc.lineno}: not valid JSON: {exc.msg}") from exc
        text = text.replace("\t", " ")  # JSON's whitespace; YAML refuses tabs (never in strings)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        raise GoldenFileError(f"{where} line {line}: not valid YAML: {exc.problem}") from exc
    except yaml.YAMLError as exc:
        raise GoldenFileError(f"{where}: not valid YAML: {exc}") from exc
    if root is None:
        raise GoldenFileError(f"{where} is empty", hint=f"expected a list of questions: {SHAPE}")
    entries = _entries(root, where)
    if len(entries) > MAX_QUESTIONS:
        raise GoldenFileError(
            f"{where} holds {len(entries):,} questions, over {MAX_QUESTIONS:,}",
            hint="split it, or run a part of it with --sample N",
        )
    questions: list[GoldenQuestion] = []
    seen: dict[str, int] = {}
    for node in entries:
        q = _question(node, where)
        if q.question in seen:
            raise GoldenFileError(
                f"{where} line {q.line}: the same question as line {seen[q.question]}",
                hint="each question once (scores are compared question by question)",
            )
        seen[q.question] = q.line
        questions.append(q)
    if not questions:
        raise GoldenFileError(f"{where} holds no question", hint=SHAPE)
    return questions


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _wrong(where: str, node: yaml.Node, what: str) -> GoldenFileError:
    return GoldenFileError(f"{where} line {_line(node)}: {what}", hint=SHAPE)


def _entries(root: yaml.Node, where: str) -> list[yaml.Node]:
    if isinstance(root, yaml.MappingNode):
        found = {k.value: v for k, v in root.value if isinstance(k, yaml.ScalarNode)}
        if "questions" not in found:
            raise _wrong(where, root, "expected a `questions:` list (or a bare list of questions)")
        root = found["questions"]
    if not isinstance(root, yaml.SequenceNode):
        raise _wrong(where, root, f"expected a list of questions, found {_kind(root)}")
    return list(root.value)


def _kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    return f"{node.value!r}" if node.value else "nothing"


def _question(node: yaml.Node, where: str) -> GoldenQuestion:
    if not isinstance(node, yaml.MappingNode):
        raise _wrong(where, node, f"expected a question (a mapping), found {_kind(node)}")
    fields: dict[str, yaml.Node] = {}
    for key, value in node.value:
        name = key.value if isinstance(key, yaml.ScalarNode) else None
        if name not in KEYS:
            raise _wrong(where, key, f"unknown key {name!r} (expected {', '.join(KEYS)})")
        fields[name] = value
    for needed in ("question", "expect"):
        if needed not in fields:
            raise _wrong(where, node, f"this entry has no `{needed}`")
    asked = fields["question"]
    if not isinstance(asked, yaml.ScalarNode) or not asked.value.strip():
        raise _wrong(where, asked, f"`question` must be text, found {_kind(asked)}")
    try:
        question = check_question(asked.value)
    except UsageError as exc:
        raise _wrong(where, asked, f"{exc.message} ({exc.hint})") from exc
    return GoldenQuestion(
        question, _facts(fields["expect"], where), _line(node), _id(fields, where)
    )


def _facts(node: yaml.Node, where: str) -> tuple[str, ...]:
    if isinstance(node, yaml.ScalarNode):
        if " ".join(node.value.split()).lower() == NOT_COVERED:
            return ()
        if node.value.strip():  # one fact
            return (" ".join(node.value.split()),)
        return _no_facts(where, node)
    if isinstance(node, yaml.SequenceNode):
        facts = []
        for item in node.value:
            if not isinstance(item, yaml.ScalarNode) or not item.value.strip():
                raise _wrong(where, item, f"a fact must be text, found {_kind(item)}")
            facts.append(" ".join(item.value.split()))
        return tuple(facts) if facts else _no_facts(where, node)
    raise _wrong(
        where, node, f"`expect` must be a list of facts or `not covered`, found {_kind(node)}"
    )


def _no_facts(where: str, node: yaml.Node) -> tuple[str, ...]:
    raise _wrong(where, node, "`expect` lists no fact (write `not covered` if none is wanted)")


def _id(fields: dict[str, yaml.Node], where: str) -> str:
    node = fields.get("id")
    if node is None:
        return ""
    if not isinstance(node, yaml.ScalarNode):
        raise _wrong(where, node, f"`id` must be text, found {_kind(node)}")
    return node.value.strip()
