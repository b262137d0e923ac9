"""Lessons end to end: agent sessions compiled with the CLI (the stand-in model over real
HTTP) teach lessons whose confidence grows as later sessions show them again; `kb-ai
learned` lists them and takes a person's verdict; the session-start hook (its own
process) shows the surest."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kb_ai.cli import main
from tests.kb_ai.test_hooks import agent_hook
from wiki import KnowledgeBase, git

PUSH = "Never push to main without running pytest -x first."
PUSH_AGAIN = "Never push to main without running the pytest -x suite first, please."
SUDO = "Do not use sudo for pip installs in this repository."


def session(tmp_path, name: str, ask: str, *more: str):
    """A coding session as a JSON list of messages (one of the transcript formats)."""
    messages = [
        {"role": "user", "content": f"{ask} {' '.join(more)}"},
        {"role": "assistant", "content": f"Done: {name} is in place and its tests pass."},
    ]
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(messages), encoding="utf-8")
    return path


def cli(kb, *args):
    return CliRunner().invoke(main, ["--kb", str(kb.root), *args], catch_exceptions=False)


def lessons(kb, *args):
    result = cli(kb, "learned", "list", "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def the(rows, words):
    found = [r for r in rows if words in r["text"]]
    assert len(found) == 1, rows
    return found[0]


def lesson_lines(text):
    """The snapshot's lesson lines (its article lines may quote a session's words too)."""
    return [
        line for line in text.splitlines() if line.startswith(("- pitfall (", "- convention ("))
    ]


def snapshot(kb, session_id):
    event = json.dumps({"session_id": session_id, "cwd": str(kb.root)})
    out = agent_hook("session-start", stdin=event)
    assert out.returncode == 0
    return out.stdout


@pytest.fixture
def kb(tmp_path, fake_model):
    return KnowledgeBase.init(tmp_path / "kb")


def test_a_lesson_seen_again_grows_surer_and_enters_the_snapshot(kb, tmp_path):
    first = session(tmp_path, "flaky-queue-test", "Fix the flaky queue test.", PUSH)
    assert cli(kb, "compile", str(first)).exit_code == 0
    push = the(lessons(kb), "push to main")
    assert (push["state"], push["confidence"], push["seen"]) == ("new", 0.5, 1)
    assert lesson_lines(snapshot(kb, "s1")) == []  # seen once: a guess, not yet a rule

    second = session(tmp_path, "export-command", "Add the export command.", PUSH_AGAIN, SUDO)
    out = cli(kb, "compile", str(second))
    assert out.exit_code == 0 and f"seen     lessons/{push['id']}.md" in out.output
    rows = lessons(kb)
    again = the(rows, "push to main")
    assert again["id"] == push["id"]  # the near-duplicate wording merged into one lesson
    assert (again["state"], again["confidence"], again["seen"]) == ("active", 0.55, 2)
    assert the(rows, "sudo")["state"] == "new"
    shown = snapshot(kb, "s2").splitlines()
    assert shown[0].startswith("- convention (confidence 0.55, seen in 2 sessions): Never push")
    assert len(shown) <= 5 and len("\n".join(shown).encode()) <= 1024
    assert "`ask` tool" in shown[-1]
    assert snapshot(kb, "s1") == snapshot(kb, "s1")  # within a session: the same bytes

    # the same session compiled again as it grew counts once
    grown = session(
        tmp_path, "export-command", "Add the export command.", PUSH_AGAIN, SUDO, "Also add --csv."
    )
    assert cli(kb, "compile", str(grown)).exit_code == 0
    assert the(lessons(kb), "push to main")["seen"] == 2

    third = session(tmp_path, "release-notes", "Write the release notes.", PUSH)
    assert cli(kb, "compile", str(third)).exit_code == 0
    final = the(lessons(kb), "push to main")
    assert (final["confidence"], final["seen"]) == (0.6, 3)
    lesson_file = (kb.root / final["path"]).read_text()
    assert "confidence: 0.6\n" in lesson_file and "seen: 3\n" in lesson_file
    assert final["path"] in git(kb, "ls-files", "lessons")  # versioned with the wiki


def test_a_person_approves_and_rejects_and_rejected_stays_out(kb, tmp_path):
    for i, ask in enumerate(["Fix the login form.", "Speed up the importer."]):
        path = session(tmp_path, f"s{i}", ask, PUSH if i else PUSH_AGAIN, SUDO if i == 0 else "")
        assert cli(kb, "compile", str(path)).exit_code == 0
    rows = lessons(kb)
    push, sudo = the(rows, "push to main"), the(rows, "sudo")
    assert push["state"] == "active" and sudo["state"] == "new"

    unknown = cli(kb, "learned", "approve", "no-such-lesson")
    assert unknown.exit_code == 2 and "no lesson no-such-lesson" in unknown.output
    assert "kb-ai learned list" in unknown.output
    assert lessons(kb) == rows  # nothing changed

    approved = cli(kb, "learned", "approve", sudo["id"])
    assert approved.exit_code == 0 and "Approved" in approved.output
    shown = snapshot(kb, "after-approve").splitlines()
    assert shown[0].startswith("- convention (approved, seen in 1 session): Do not use sudo")
    assert "Never push" in shown[1]  # approved first, then the active ones

    rejected = cli(kb, "learned", "reject", push["id"])
    assert rejected.exit_code == 0
    subject = git(kb, "log", "-1", "--format=%s%n%an").splitlines()
    assert subject[0] == "learned: reject 1 lesson(s)" and subject[1] != "kb-ai"
    assert [
        line for line in lesson_lines(snapshot(kb, "after-reject")) if "Never push" in line
    ] == []

    # the same evidence again does not bring it back, nor as a new lesson
    later = session(tmp_path, "s9", "Tidy the changelog.", PUSH)
    assert cli(kb, "compile", str(later)).exit_code == 0
    rows = lessons(kb)
    back = the(rows, "push to main")
    assert back["state"] == "rejected" and back["seen"] == 3
    assert [line for line in lesson_lines(snapshot(kb, "after-more")) if "Never push" in line] == []
    assert [r["id"] for r in lessons(kb, "--state", "approved")] == [sudo["id"]]


def test_learn_review_holds_a_sessions_lessons_for_approval(kb, tmp_path):
    (kb.root / "kb-ai.toml").write_text(
        (kb.root / "kb-ai.toml").read_text() + "\nlearn_review = true\n"
    )
    for i in range(2):
        path = session(tmp_path, f"r{i}", f"Review change {i}.", PUSH)
        assert cli(kb, "compile", str(path)).exit_code == 0
    push = the(lessons(kb), "push to main")
    assert push["state"] == "pending" and push["confidence"] == 0.55
    assert lesson_lines(snapshot(kb, "held")) == []  # sure enough, but no one approved it
    assert cli(kb, "learned", "approve", push["id"]).exit_code == 0
    assert snapshot(kb, "approved").startswith("- convention (approved, seen in 2 sessions)")
