"""The application layer (kb_ai/service): who acts reaches git and log.md, and the
verbs give typed results."""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest
from click.testing import CliRunner

from kb_ai.cli import main
from kb_ai.errors import UsageError
from kb_ai.service import Actor, open_kb
from kb_ai.service.asking import ask, ask_events
from retrieval import Delta, Done, Status
from tests.fakes import kb_responder
from tests.fakes.fake_llm import FakeLLM
from wiki import git

NOTE = (
    "# Nightly backups\n\nBackups of the main database run nightly at 02:00. "
    "Backup copies are kept for thirty days in a separate account.\n"
)


def respond(stage, messages, schema):
    """The fake model server's answers, in-process."""
    request = {"messages": messages}
    if schema is not None:
        request["response_format"] = {"type": "json_schema", "json_schema": {"schema": schema}}
    text = kb_responder.respond(request).content
    return json.loads(text) if schema is not None else text


def last_commit(kb) -> str:
    return git(kb, "log", "-1", "--format=%an|%ae|%cn|%ce").strip()


def test_a_cli_compile_is_authored_by_the_person_at_the_terminal(kb, fake_model, tmp_path):
    subprocess.run(["git", "config", "user.name", "Ada Lovelace"], cwd=kb.root, check=True)
    subprocess.run(["git", "config", "user.email", "ada@example.org"], cwd=kb.root, check=True)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "backups.md").write_text(NOTE, encoding="utf-8")
    result = CliRunner().invoke(main, ["--kb", str(kb.root), "compile", str(notes)])
    assert result.exit_code == 0, result.output
    assert last_commit(kb) == "Ada Lovelace|ada@example.org|kb-ai|kb-ai@localhost"
    log = kb.log_path.read_text(encoding="utf-8")
    assert log.rstrip().endswith("- by Ada Lovelace <ada@example.org> (cli)")


def test_without_a_git_identity_the_cli_user_is_the_login_name(kb, fake_model, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "backups.md").write_text(NOTE, encoding="utf-8")
    result = CliRunner().invoke(main, ["--kb", str(kb.root), "compile", str(notes)])
    assert result.exit_code == 0, result.output
    author, email, committer, _ = last_commit(kb).split("|")
    assert author == Actor.cli_user(kb.root).name and email == ""
    assert committer == "kb-ai"


def test_commits_made_through_an_opened_kb_name_its_actor(kb, settings, tmp_path):
    grace = Actor("person", "Grace Hopper", "grace@example.org")
    okb = open_kb(settings=settings, actor=grace, llm_factory=lambda s, **k: FakeLLM(respond))
    from kb_ai.service import compiling

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "backups.md").write_text(NOTE, encoding="utf-8")
    result = asyncio.run(compiling.compile_paths(okb, [notes]))
    assert result.commit and not result.failed
    assert last_commit(kb) == "Grace Hopper|grace@example.org|kb-ai|kb-ai@localhost"
    # another actor on the same knowledge base: the next commit is theirs
    bot = okb.acting_as(Actor.agent("claude-code"))
    removed = asyncio.run(compiling.remove(bot, [str(notes / "backups.md")], reason="gone"))
    assert removed.commit
    assert last_commit(kb) == "claude-code||kb-ai|kb-ai@localhost"


def test_ask_gives_typed_events_and_the_answer_itself(kb, settings, tmp_path):
    okb = open_kb(settings=settings, llm_factory=lambda s, **k: FakeLLM(respond))
    from kb_ai.service import compiling

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "backups.md").write_text(NOTE, encoding="utf-8")
    asyncio.run(compiling.compile_paths(okb, [notes]))

    async def events():
        return [e async for e in ask_events(okb, "How long are nightly backups kept?")]

    seen = asyncio.run(events())
    assert isinstance(seen[0], Status) and isinstance(seen[-1], Done)
    answer = seen[-1].answer
    assert "".join(e.text for e in seen if isinstance(e, Delta)) == answer.answer
    assert [c.path for c in answer.citations] == ["wiki/concept/nightly-backups.md"]
    again = asyncio.run(ask(okb, "How long are nightly backups kept?"))
    assert again.answer == answer.answer and again.citations == answer.citations


@pytest.mark.parametrize("question", ["", "   \n ", None, 42])
def test_a_question_that_is_no_question_is_refused_before_a_model_is_opened(kb, settings, question):
    opened = []
    okb = open_kb(settings=settings, llm_factory=lambda s, **k: opened.append(1))
    with pytest.raises(UsageError, match="The question is empty"):
        asyncio.run(ask(okb, question))
    assert opened == []


def test_an_actor_must_be_one_git_can_write():
    with pytest.raises(UsageError):
        Actor("person", "Mallory <evil@example.org>")
    with pytest.raises(UsageError):
        Actor("robot", "R2")
    assert Actor.of(Actor("agent", "codex").as_dict()) == Actor("agent", "codex")
