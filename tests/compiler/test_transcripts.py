"""Transcripts: real Claude Code and SWE-agent sessions, and Codex, chat JSON and Markdown
chat fixtures, recognised by content and normalised into a readable, much shorter text."""

import asyncio
import json
import math
import os
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from compiler import Compiler
from compiler.discover import Candidate, discover, file_checksum
from compiler.sources import read_source
from compiler.transcripts import HEAD_BYTES, detect, parse
from kb_ai.errors import SourceError
from tests.compiler.conftest import responder_handler
from tests.conftest import needs_shared_data, shared_data, skip_without_shared_data
from tests.fakes.fake_llm import FakeLLM
from wiki import read_article

DATA = shared_data("transcripts")


def real(kind: str, pattern: str) -> list:
    files = sorted((DATA / kind).glob(pattern)) if (DATA / kind).is_dir() else []
    if not files:
        return [pytest.param(None, marks=needs_shared_data("transcripts"))]
    return [pytest.param(f, id=f.name[-40:]) for f in files]


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def expected_requests(recs: list[dict]) -> list[str]:
    """What the user typed, read straight from the JSONL (not through the parser)."""
    out = []
    for r in recs:
        if r.get("type") != "user" or r.get("isSidechain") or r.get("isMeta"):
            continue
        if r.get("isCompactSummary"):
            continue
        content = r["message"]["content"]
        texts = (
            [content]
            if isinstance(content, str)
            else [b["text"] for b in content if b.get("type") == "text"]
        )
        for t in texts:
            if not t.startswith(("<command-name>", "<local-command", "Caveat:", "This session is")):
                out.append(t)
    return out


def squash(text: str) -> str:
    return " ".join(text.replace("#", "").split())


def plain(text: str) -> str:
    return " ".join(re.sub(r"[*_`#>]+", "", text).split())


# -- Claude Code -----------------------------------------------------------------------


@pytest.mark.parametrize("path", real("claude_code", "*.jsonl"))
def test_a_claude_code_session_reads_as_its_requests_in_order_in_far_less_text(path):
    data = path.read_bytes()
    assert detect(data, path.name) == "claude-code"
    assert detect(data[:HEAD_BYTES], path.name) == "claude-code"  # discovery reads a head
    tr = parse(data, path.name)
    text = tr.to_text()
    assert len(text) < len(data) / 4

    wanted = expected_requests(records(path))
    flat = squash(text)
    pos = 0
    for request in wanted:  # each request appears, in the order it was made
        pos = flat.index(squash(request)[:60], pos)
    assert len(tr.user_requests()) <= len(wanted)
    # tool results come back as role "user" but are never shown as the user speaking
    assert text.count("## User") == sum(1 for t in tr.turns if t.role == "user")
    if wanted:  # titled by the first request
        assert plain(wanted[0]).startswith(tr.title.removesuffix("…"))
        assert tr.started_at and tr.started_at.startswith("2025-")


@pytest.mark.parametrize("path", real("claude_code", "*.jsonl"))
def test_tool_calls_are_one_line_each_and_thinking_and_sidechains_are_gone(path):
    recs = records(path)
    text = parse(path.read_bytes(), path.name).to_text()
    assert '"file_path"' not in text and '"tool_use_id"' not in text
    for r in recs:
        if r.get("type") != "assistant" or r.get("isSidechain"):
            continue
        for block in r["message"]["content"]:
            if block.get("type") == "thinking":
                assert squash(block["thinking"])[:80] not in squash(text)
            if block.get("type") == "tool_use" and block["name"] == "Bash":
                first = block["input"]["command"].strip().splitlines()[0]
                assert f"→ Bash: {' '.join(first.split())[:100]}" in text
            if block.get("type") == "tool_use" and block["name"] in ("Edit", "Write"):
                name = Path(block["input"]["file_path"]).name
                assert any(
                    line.startswith(f"→ {block['name']}: ") and line.endswith(name)
                    for line in text.splitlines()
                )
    # a sub-agent's own conversation (Task tool) is not the user speaking
    requests = [squash(r) for r in parse(path.read_bytes(), path.name).user_requests()]
    for r in recs:
        if r.get("isSidechain") and r.get("type") == "user":
            content = r["message"]["content"]
            if isinstance(content, str):
                assert not any(q.startswith(squash(content)[:60]) for q in requests)


def test_assistant_lines_sharing_a_message_id_stay_one_turn():
    checked = 0
    for path in sorted((DATA / "claude_code").glob("*.jsonl")):
        recs = [
            r for r in records(path) if r.get("type") == "assistant" and not r.get("isSidechain")
        ]
        tr = parse(path.read_bytes(), path.name)
        turns = [
            (
                [p for p in t.parts if isinstance(p, str)],
                [p.summary for p in t.parts if not isinstance(p, str) and p.name == "Bash"],
            )
            for t in tr.turns
            if t.role == "assistant"
        ]
        lines_of: dict[str, int] = {}
        by_id: dict[str, list[dict]] = {}
        for r in recs:
            lines_of[r["message"]["id"]] = lines_of.get(r["message"]["id"], 0) + 1
            by_id.setdefault(r["message"]["id"], []).extend(r["message"]["content"])
        for msg_id, blocks in by_id.items():
            said = [b["text"].strip() for b in blocks if b.get("type") == "text"]
            ran = [
                " ".join(b["input"]["command"].split())[:40]
                for b in blocks
                if b.get("type") == "tool_use" and b["name"] == "Bash"
            ]
            if lines_of[msg_id] < 2 or not (said and ran):
                continue
            # the text and the command, written on separate lines, are in one turn
            assert any(
                said[0] in texts and any(c.startswith(ran[0]) for c in calls)
                for texts, calls in turns
            ), (path.name, msg_id)
            checked += 1
    if not checked:
        skip_without_shared_data(DATA)
    assert checked > 20


def test_a_failed_command_keeps_its_error_and_the_request_it_answered():
    path = DATA / "claude_code" / "9dd861b1-71f8-41ee-bb93-7d3724bcb337.jsonl"
    if not path.is_file():
        skip_without_shared_data(DATA)
    text = parse(path.read_bytes(), path.name).to_text()
    assert text.startswith("# install the wifiman in this repo app center is not working\n")
    assert "→ Bash: sudo dpkg -i /home/kenth56/Downloads/wifiman-desktop-1.1.3-amd64.deb" in text
    assert "sudo: a password is required" in text
    assert "→ LS: /home/kenth56/Downloads" in text
    assert "CLion-2025.1.3.tar.gz" not in text  # a listing that worked is not kept
    assert "Caveat:" not in text and "/exit" not in text


def test_a_compacted_session_keeps_a_short_note_of_what_came_before():
    path = DATA / "claude_code" / "0a725fb5-6378-432a-9e84-9f3f49d4043d.jsonl"
    if not path.is_file():
        skip_without_shared_data(DATA)
    summary = next(r for r in records(path) if r.get("isCompactSummary"))["message"]["content"]
    text = parse(path.read_bytes(), path.name).to_text()
    assert text.count("**Earlier in this session:**") == 1
    note = text.split("**Earlier in this session:**", 1)[1].split("## ", 1)[0]
    assert "Errors and fixes" in note and "Missing \\begin{document}" in note
    assert len(note) < len(summary) / 2
    assert "Claude Opus 4 limit reached" not in text  # system records are not conversation


def test_a_session_of_local_commands_only_is_not_a_source(tmp_path):
    path = DATA / "claude_code" / "9b92ce83-1981-4cdc-9f5d-7f66c4b10389.jsonl"
    if not path.is_file():
        skip_without_shared_data(DATA)
    tr = parse(path.read_bytes(), path.name)
    assert tr.is_empty() and tr.title == "Claude Code session 9b92ce83"
    with pytest.raises(SourceError, match="no conversation"):
        read_source(Candidate(path, str(path)), max_bytes=10**6, chunk_chars=10_000)


# -- SWE-agent -------------------------------------------------------------------------


@pytest.mark.parametrize("path", real("swe_agent", "*.traj"))
def test_a_swe_agent_trajectory_reads_as_the_issue_the_steps_and_the_patch(path):
    data = path.read_bytes()
    traj = json.loads(data)
    assert detect(data, path.name) == "swe-agent"
    assert detect(data, "run.json") == "swe-agent"
    tr = parse(data, path.name)
    text = tr.to_text()
    assert len(text) < len(data) / 4
    assert "SETTING: You are an autonomous programmer" not in text  # the system prompt
    assert "--- DEMONSTRATION ---" not in text and "TimeDelta" not in text
    assert "INSTRUCTIONS:" not in text
    assert text.count("## User") == 1
    assert text.count("\n→ ") == len(traj["trajectory"])
    files = {
        line.split(" b/")[0][len("diff --git a/") :]
        for line in traj["info"]["submission"].splitlines()
        if line.startswith("diff --git")
    }
    assert "Submitted a patch to " + ", ".join(sorted(files)) in text or all(
        f in text for f in files
    )
    assert "Run ended: submitted." in text
    assert tr.title and tr.title.split()[0] in text.split("## User", 1)[1]


# -- Codex, chat JSON, Markdown chat (fixtures written here) ------------------------------


def codex_rollout() -> str:
    def line(kind, payload, t="2025-10-29T00:59:38.317Z"):
        return json.dumps({"timestamp": t, "type": kind, "payload": payload})

    def msg(role, text, block="input_text"):
        return line(
            "response_item",
            {"type": "message", "role": role, "content": [{"type": block, "text": text}]},
        )

    return (
        "\n".join(
            [
                line(
                    "session_meta",
                    {
                        "id": "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5",
                        "timestamp": "2025-10-29T00:59:38.308Z",
                        "cwd": "/work/app",
                        "originator": "codex_cli_rs",
                        "cli_version": "0.46.0",
                    },
                ),
                msg(
                    "developer",
                    "<permissions instructions>You may run commands.</permissions instructions>",
                ),
                msg(
                    "user", "<environment_context>\n  <cwd>/work/app</cwd>\n</environment_context>"
                ),
                msg("user", "The login test fails, fix it. Never touch the migrations folder."),
                line(
                    "event_msg",
                    {
                        "type": "user_message",
                        "message": "The login test fails, fix it. "
                        "Never touch the migrations folder.",
                        "kind": "plain",
                    },
                ),
                line(
                    "turn_context",
                    {"cwd": "/work/app", "model": "gpt-5-codex", "approval_policy": "never"},
                ),
                line(
                    "response_item",
                    {
                        "type": "reasoning",
                        "summary": [
                            {"type": "summary_text", "text": "**Maybe the fixture is stale**"}
                        ],
                        "encrypted_content": "gAAAAB",
                    },
                ),
                line(
                    "event_msg",
                    {"type": "agent_reasoning", "text": "**Maybe the fixture is stale**"},
                ),
                line(
                    "response_item",
                    {
                        "type": "function_call",
                        "name": "shell",
                        "call_id": "call_1",
                        "arguments": json.dumps(
                            {"command": ["bash", "-lc", "pytest -x tests/test_login.py"]}
                        ),
                    },
                ),
                line(
                    "response_item",
                    {
                        "type": "function_call_output",
                        "call_id": "call_1",
                        "output": json.dumps(
                            {
                                "output": "collected 3 items\n"
                                + "ok\n" * 30
                                + "E   KeyError: 'session_secret'\nFAILED tests/test_login.py::test_login - KeyError\n",
                                "metadata": {"exit_code": 1},
                            }
                        ),
                    },
                ),
                line(
                    "response_item",
                    {
                        "type": "custom_tool_call",
                        "name": "apply_patch",
                        "call_id": "call_2",
                        "input": "*** Begin Patch\n*** Update File: src/app/settings.py\n@@\n-x\n+y\n*** End Patch",
                    },
                ),
                line(
                    "response_item",
                    {"type": "custom_tool_call_output", "call_id": "call_2", "output": "Success."},
                ),
                line(
                    "response_item",
                    {
                        "type": "function_call",
                        "name": "shell",
                        "call_id": "call_3",
                        "arguments": json.dumps(
                            {"command": ["bash", "-lc", "pytest -x tests/test_login.py"]}
                        ),
                    },
                ),
                line(
                    "response_item",
                    {
                        "type": "function_call_output",
                        "call_id": "call_3",
                        "output": json.dumps(
                            {"output": "3 passed in 0.4s", "metadata": {"exit_code": 0}}
                        ),
                    },
                ),
                msg(
                    "assistant",
                    "The settings lacked SESSION_SECRET in tests; I added a default. Tests pass.",
                    "output_text",
                ),
                line(
                    "event_msg",
                    {"type": "agent_message", "message": "The settings lacked SESSION_SECRET"},
                ),
            ]
        )
        + "\n"
    )


def test_a_codex_rollout_reads_as_requests_commands_errors_and_conclusions():
    data = codex_rollout()
    assert detect(data, "rollout-2025-10-29T00-59-38-019a2d7a.jsonl") == "codex"
    tr = parse(data, "rollout.jsonl")
    text = tr.to_text()
    assert tr.title == "The login test fails, fix it. Never touch the migrations folder."
    assert tr.started_at == "2025-10-29T00:59:38.308Z"
    assert text.count("Never touch the migrations folder") == 2  # title and request, no echo
    assert "environment_context" not in text and "permissions instructions" not in text
    assert "fixture is stale" not in text  # reasoning is speculation
    assert "→ Bash: pytest -x tests/test_login.py\nerror:" in text
    assert "KeyError: 'session_secret'" in text and "FAILED tests/test_login.py" in text
    assert "ok\nok\nok\nok" not in text and "lines elided" in text
    assert "→ Edit: src/app/settings.py" in text
    assert "3 passed in 0.4s" in text
    assert text.rstrip().endswith("I added a default. Tests pass.")


CHAT = [
    {"role": "system", "content": "You are a helpful assistant. Answer briefly."},
    {"role": "user", "content": "How do we deploy the docs site?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {
                    "name": "run",
                    "arguments": json.dumps({"command": "make docs-deploy"}),
                },
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "error: permission denied (publickey)"},
    {
        "role": "assistant",
        "content": [{"type": "text", "text": "Add your key to the deploy user first."}],
    },
    {"role": "user", "content": "Thanks, that worked."},
]


def test_a_plain_chat_json_list_reads_as_its_turns_without_the_system_prompt():
    data = json.dumps(CHAT, indent=2)
    assert detect(data, "chat.json") == "chat-json"
    assert detect(json.dumps({"messages": CHAT}), "export.json") == "chat-json"
    text = parse(data, "chat.json").to_text()
    assert "helpful assistant" not in text
    assert "## User\n\nHow do we deploy the docs site?" in text
    assert "→ run: make docs-deploy\nerror:" not in text  # the tool role carries no error flag
    assert "→ run: make docs-deploy" in text and "permission denied (publickey)" in text
    assert text.index("Add your key") < text.index("Thanks, that worked.")


MARKDOWN_CHAT = """\
# Chat about the cache

**User:** Why is the build cache never hit on CI?

**Assistant:** The cache key includes the commit SHA, so every commit misses. Key it on
the lockfile hash instead:

```yaml
key: deps-${{ hashFiles('poetry.lock') }}
user: ci
```

**User:** Don't cache the virtualenv itself, only the wheels.

**Assistant:** Agreed: cache ~/.cache/pip only.
"""


def test_a_markdown_chat_log_is_split_into_turns_and_code_blocks_are_not_speakers():
    assert detect(MARKDOWN_CHAT, "cache.md") == "chat-markdown"
    tr = parse(MARKDOWN_CHAT, "cache.md")
    assert [t.role for t in tr.turns] == ["user", "assistant", "user", "assistant"]
    assert tr.title == "Chat about the cache"  # the log's own heading
    assert parse(MARKDOWN_CHAT.split("\n", 2)[2], "c.md").title == (
        "Why is the build cache never hit on CI?"
    )
    assert "user: ci" in tr.turns[1].text()
    for variant in (
        MARKDOWN_CHAT.replace("**User:**", "User:").replace("**Assistant:**", "Assistant:"),
        MARKDOWN_CHAT.replace("**User:** ", "## User\n\n").replace(
            "**Assistant:** ", "## Assistant\n\n"
        ),
    ):
        assert detect(variant, "log.txt") == "chat-markdown"
        assert len(parse(variant, "log.txt").user_requests()) == 2


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ('{"step": 1, "loss": 0.93}\n{"step": 2, "loss": 0.88}\n', "metrics.jsonl"),
        ('{"name": "kb-ai", "version": "1.0.0", "dependencies": {}}', "package.json"),
        ('[{"id": 1, "title": "a"}, {"id": 2, "title": "b"}]', "items.json"),
        ('{"type": "user", "name": "ada"}\n{"type": "assistant", "name": "bob"}\n', "people.jsonl"),
        ("# Onboarding\n\nUser: the person who logs in.\nYou can reset a password here.\n", "a.md"),
        ("# Notes\n\n```yaml\nuser: admin\nassistant: bot\n```\n", "b.md"),
    ],
)
def test_things_that_look_a_little_like_transcripts_are_not_transcripts(text, name):
    assert detect(text, name) is None


def test_transcripts_are_found_by_content_whatever_their_name(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    (d / "metrics.jsonl").write_text('{"step": 1, "loss": 0.9}\n')
    (d / "package.json").write_text('{"name": "x"}')
    (d / "session.jsonl").write_text(codex_rollout())
    (d / "chat.json").write_text(json.dumps(CHAT))
    (d / "notes.txt").write_text(codex_rollout())  # a transcript saved under a text name
    found, problems = discover([d])
    assert sorted(c.path.name for c in found) == ["chat.json", "notes.txt", "session.jsonl"]
    assert problems == []
    src = read_source(
        next(c for c in found if c.path.name == "notes.txt"), max_bytes=10**6, chunk_chars=10_000
    )
    assert src.kind == "transcript"
    assert src.title.startswith("The login test fails")
    assert src.text.startswith("# The login test fails") and '"payload"' not in src.text


def test_transcripts_may_be_larger_than_other_sources_up_to_their_own_limit(tmp_path):
    big = tmp_path / "rollout.jsonl"
    big.write_text(codex_rollout())
    note = tmp_path / "big.md"
    note.write_text("# Big\n\n" + "word " * (big.stat().st_size // 5 + 10))
    limit = big.stat().st_size - 1
    with pytest.raises(SourceError, match="max_source_bytes"):
        file_checksum(big, limit)
    file_checksum(big, limit, max_transcript_bytes=limit * 10)  # accepted
    with pytest.raises(SourceError, match="max_source_bytes"):
        file_checksum(note, limit, max_transcript_bytes=limit * 10)
    with pytest.raises(SourceError, match="max_transcript_bytes"):
        file_checksum(big, limit // 4, max_transcript_bytes=limit // 2)


# -- end to end ------------------------------------------------------------------------

PLANTED = "ghp_Zx8Yw7Vu6Ts5Rq4Po3Nm2Lk1Jh0Gf9Ed8Cb7A"


def test_a_real_session_compiles_to_an_article_and_no_secret_is_stored_or_sent(
    kb, settings, tmp_path
):
    path = DATA / "claude_code" / "9dd861b1-71f8-41ee-bb93-7d3724bcb337.jsonl"
    if not path.is_file():
        skip_without_shared_data(DATA)
    recs = records(path)
    last = recs[-1]
    extra = [
        {
            **last,
            "uuid": "planted-1",
            "type": "user",
            "message": {
                "role": "user",
                "content": (
                    "Never use sudo from the agent, ask me instead. The registry token is "
                    f"{PLANTED} and the mirror is https://ci:hunter2pass@mirror.example.com/apt"
                    " <private>my home address is 1 Elm St</private>"
                ),
            },
        },
        {
            **last,
            "uuid": "planted-2",
            "type": "assistant",
            "message": {
                "id": "msg_planted",
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Understood: I will ask you to run sudo commands."}
                ],
            },
        },
    ]
    session = tmp_path / "session.jsonl"
    session.write_text("\n".join(json.dumps(r) for r in recs + extra) + "\n")

    llm = FakeLLM(responder_handler)
    compiler = Compiler(kb, settings, llm_factory=lambda s, **k: llm)
    result = asyncio.run(compiler.compile_paths([str(session)]))

    assert result.failed == [] and len(result.created) == 1
    assert llm.stages() == ["extract", "classify", "write"]
    extract_prompt = llm.calls[0].messages[0]["content"]
    assert "coding agent's session transcript" in extract_prompt
    assert "pitfalls" in llm.calls[0].schema["properties"]
    raw = next((kb.root / "raw").glob("*.md")).read_text()
    assert "kind: transcript" in raw and "## User" in raw and "→ Bash: sudo dpkg -i" in raw
    stored = "\n".join(p.read_text() for p in kb.root.rglob("*.md"))
    sent = json.dumps([c.messages for c in llm.calls])
    for secret in (PLANTED, "hunter2pass", "1 Elm St"):
        assert secret not in raw and secret not in stored and secret not in sent
    extraction = next((kb.root / "extraction").glob("*.md")).read_text()
    assert "Never use sudo from the agent" in extraction  # a correction the user stated
    assert "sudo: a password is required" in extraction  # a pitfall: the error and the next step
    article = read_article(kb, result.created[0])
    assert "Never use sudo from the agent" in article.body


# -- Claude Code terminal captures (plain text) ------------------------------------------

TERMINAL = DATA / "claude_code_terminal"


def terminal_capture(first_request: str, version: str = "1.0.120") -> str:
    """The newer export shape (PROVENANCE.txt): a version banner and ● blocks."""
    return (
        f"╭─── Claude Code v{version} ────────────────────────────╮\n"
        "│                 Welcome back!                        │\n"
        "│   cwd: /home/dev/shop                                │\n"
        "╰──────────────────────────────────────────────────────╯\n"
        "\n"
        f"> {first_request}\n"
        "\n"
        "● I'll run the failing test first.\n"
        "\n"
        "● Bash(pytest tests/test_cart.py -x)\n"
        "  ⎿  Error: FAILED tests/test_cart.py::test_total - AssertionError\n"
        "     assert 9.99 == 10.0\n"
        "\n"
        "✻ Thinking…\n"
        "\n"
        "  Probably float rounding in the cart total.\n"
        "\n"
        "● Read(src/cart.py)\n"
        "  ⎿  Read 40 lines (ctrl+r to expand)\n"
        "\n"
        "● The total sums floats; money must be kept in integer cents. I changed it and \n"
        "  the test passes now.\n"
        "\n"
        "> thanks, remember: prices are always integer cents\n"
        "\n"
        "● Noted: prices are integer cents everywhere.\n"
        "\n"
        "╭──────────────────────────────────────────────────────╮\n"
        "│ >                                                    │\n"
        "╰──────────────────────────────────────────────────────╯\n"
    )


def test_a_newer_terminal_export_reads_like_the_jsonl_and_is_titled_by_its_request():
    text = terminal_capture("The cart total test fails, fix it")
    assert detect(text, "export.txt") == "claude-code-terminal"
    tr = parse(text, "export.txt")
    assert tr.title == "The cart total test fails, fix it"
    assert tr.user_requests() == [
        "The cart total test fails, fix it",
        "thanks, remember: prices are always integer cents",
    ]
    md = tr.to_text()
    assert "→ Bash: pytest tests/test_cart.py -x" in md and "assert 9.99 == 10.0" in md
    assert "I changed it and the test passes now." in md  # a terminal wrap undone
    assert "float rounding" not in md  # thinking is dropped
    assert "Welcome back" not in md and "cwd:" not in md  # the banner is no conversation
    other = parse(terminal_capture("Add a coupon field"), "export.txt")
    assert other.title != tr.title  # same version, same banner: different names


def test_an_export_compiles_as_a_transcript_whatever_its_file_is_called(tmp_path):
    path = tmp_path / "2026-03-01-session.txt"
    path.write_text(terminal_capture("The cart total test fails, fix it"))
    src = read_source(Candidate(path, str(path)), max_bytes=10**6, chunk_chars=10_000)
    assert src.kind == "transcript"
    assert src.title == "The cart total test fails, fix it (2026-03-01)"  # the name's date


def test_an_export_with_no_date_of_its_own_is_dated_by_its_file(tmp_path):
    titles = []
    for day, stamp in (("a", 1766577600), ("b", 1767787200)):  # 2025-12-24, 2026-01-07 noon UTC
        path = tmp_path / f"export-{day}.txt"
        path.write_text(terminal_capture("Make checkout retry the payment once"))
        os.utime(path, (stamp, stamp))
        src = read_source(Candidate(path, str(path)), max_bytes=10**6, chunk_chars=10_000)
        titles.append(src.title)
        assert "*Transcript of a Claude Code session, started 20" in src.text
    assert titles == [
        "Make checkout retry the payment once (2025-12-24)",
        "Make checkout retry the payment once (2026-01-07)",
    ]  # one request, two days: two names


def test_a_real_capture_is_dated_by_a_time_stamp_printed_in_it_else_by_its_file():
    dated, undated = TERMINAL / "day-005.md", TERMINAL / "day-003.md"
    if not dated.is_file() or not undated.is_file():
        skip_without_shared_data(DATA)
    # day-005 runs `git log --since="2024-04-17"` (a date in a command), then `gh run
    # list` prints the CI runs it started that day: 2025-05-25T08:02:05Z
    src = read_source(Candidate(dated, str(dated)), max_bytes=10**7, chunk_chars=10_000)
    assert src.title.endswith("(2025-05-25)"), src.title
    src = read_source(Candidate(undated, str(undated)), max_bytes=10**7, chunk_chars=10_000)
    day = datetime.fromtimestamp(undated.stat().st_mtime, UTC).date().isoformat()
    assert src.title.endswith(f"({day})"), src.title


@pytest.mark.parametrize("name", ["day-003.md", "day-005.md"])
def test_real_terminal_captures_parse_into_their_requests_and_tool_calls(name):
    path = TERMINAL / name
    if not path.is_file():
        skip_without_shared_data(DATA)
    text = path.read_text(encoding="utf-8")
    assert detect(text, name) == "claude-code-terminal"
    tr = parse(text, name)
    prompts = [ln[2:] for ln in text.splitlines() if ln.startswith("> ") and ln[2:].strip()]
    first = prompts[0]
    assert tr.title.rstrip("…").split()[:5] == first.split()[:5]
    requests = tr.user_requests()
    assert len(requests) >= len(prompts) // 2
    assert squash(first[:60]) in squash(requests[0])
    md = tr.to_text()
    assert "→ Bash: " in md and "Welcome to Claude Code" not in md
    assert len(md) < len(text)


def test_a_gemini_cli_capture_is_not_taken_for_claude_code():
    path = TERMINAL / "day-014.md"
    if not path.is_file():
        skip_without_shared_data(DATA)
    assert detect(path.read_text(encoding="utf-8"), path.name) != "claude-code-terminal"


def long_sessions() -> list[tuple[str, str]]:
    out = []
    folder = DATA / "claude_code"
    paths = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    for path in [*paths, TERMINAL / "day-005.md"]:
        if path.is_file():
            text = parse(path.read_bytes(), path.name).to_text()
            if len(text) > 20_000:
                out.append((path.name, text))
    return out


@pytest.mark.parametrize("budget", [4_000, 8_000, 24_000])
def test_a_long_session_needs_about_size_over_budget_chunks_of_whole_turns(budget):
    from compiler.sources import chunk_text
    from compiler.transcripts.chunks import pack_turns

    sessions = long_sessions()
    if not sessions:
        skip_without_shared_data(DATA)
    for name, text in sessions:
        chunks = pack_turns(text, budget)
        assert all(len(c) <= budget for c in chunks), name
        assert len(chunks) <= math.ceil(len(text) / budget * 1.1), (name, len(chunks))
        assert all(c.startswith(("#", "## User", "## Assistant")) for c in chunks), name
        turns = re.findall(r"^## (?:User|Assistant)$", text, re.M)
        assert sum(len(re.findall(r"^## (?:User|Assistant)$", c, re.M)) for c in chunks) == len(
            turns
        )
    assert any(
        len(chunk_text(text, 8_000)) > math.ceil(len(text) / 8_000 * 1.1) for _, text in sessions
    )  # what the notes' chunker made of them


def test_real_claude_code_files_hold_one_session_each_and_a_summary_links_no_parent():
    """What ../shared/data shows of sessions that follow one another (issue 15, part 4):
    every file holds one sessionId, its own name, and no message of another file; no
    first message names a parent. 9cc4a4b0 opens with a summary record whose leafUuid is
    the last message of 9dd861b1 (exited six minutes before, same directory, same task),
    while its first request has no parentUuid: the summary titles the earlier
    conversation for the resume picker; it does not make the two one session."""
    from compiler.sessions import session_key

    paths = sorted((DATA / "claude_code").glob("*.jsonl"))
    if not paths:
        skip_without_shared_data(DATA)
    owners: dict[str, str] = {}
    for path in paths:
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        assert {r["sessionId"] for r in records if "sessionId" in r} == {path.stem}
        talk = [r for r in records if r.get("type") in ("user", "assistant")]
        assert talk[0].get("parentUuid") is None
        for r in talk:
            assert owners.setdefault(r["uuid"], path.stem) == path.stem
        tr = parse(path.read_bytes(), path.name)
        assert session_key(tr.agent, tr.session_id) == f"session:claude-code:{path.stem}"
    earlier = DATA / "claude_code" / "9dd861b1-71f8-41ee-bb93-7d3724bcb337.jsonl"
    later = DATA / "claude_code" / "9cc4a4b0-cba8-4e56-b79f-80b730735150.jsonl"
    [summary] = [json.loads(x) for x in later.read_text().splitlines() if '"summary"' in x[:30]]
    assert owners[summary["leafUuid"]] == earlier.stem
    tr = parse(later.read_bytes(), later.name)
    assert tr.session_id == later.stem and tr.title != summary["summary"]
