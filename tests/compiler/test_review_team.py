"""Review as a team: review_policy says which runs wait; a reviewer approves or rejects a
run or single articles of it, with a comment the audit log and the commit keep; a person
does not decide on their own run unless review_self_approve allows it."""

from __future__ import annotations

import asyncio
import json

import pytest
from click.testing import CliRunner

from kb_ai.cli import main
from kb_ai.errors import ConfigError
from kb_ai.service import compiling, open_kb, people, reviewing
from kb_ai.service.errors import SelfReviewError
from kb_ai.settings import load_settings
from wiki import git, list_articles

CACHE = "wiki/concept/cache.md"
QUEUE = "wiki/concept/queue.md"
NOTES = {
    "cache.md": "# Cache\n\nWe chose Redis. The TTL is 30 minutes.\n",
    "queue.md": "# Queue\n\nJobs go through RabbitMQ with 4 workers.\n",
}


def run(kb, *args):
    return CliRunner().invoke(main, ["--kb", str(kb.root), *args])


def set_policy(kb, text):
    kb.config_path.write_text(kb.config_path.read_text() + text)


def add(kb, name, role):
    person, _ = people.add(open_kb(kb.root, detect=False), name, role)
    return person.actor


def compile_as(kb, tmp_path, actor, notes, folder="notes"):
    """Compile ``notes`` in one run as ``actor`` (a person, as the web queue would)."""
    folder = tmp_path / folder
    folder.mkdir()
    for name, text in notes.items():
        (folder / name).write_text(text)
    okb = open_kb(kb.root, actor=actor)
    return asyncio.run(compiling.compile_paths(okb, [folder]))


def commit_messages(kb):
    return git(kb, "log", "--format=%an|%B%x00").split("\0")


def test_contributors_policy_holds_a_contributors_run_and_not_a_reviewers(kb, fake_model, tmp_path):
    set_policy(kb, 'review_policy = "contributors"\n')
    cora, rex = add(kb, "Cora Contributor", "contributor"), add(kb, "Rex Reviewer", "reviewer")
    held = compile_as(kb, tmp_path, cora, {"cache.md": NOTES["cache.md"]})
    assert held.review and CACHE not in list_articles(kb)
    assert not (kb.root / "raw" / "cache.md").exists()  # main as it was, but its settings
    (waiting,) = json.loads(run(kb, "review", "list", "--json").output)
    assert waiting["submitted_by"] == "Cora Contributor"
    assert "Cora Contributor is a contributor" in waiting["reason"]
    listed = run(kb, "review", "list").output
    assert "by Cora Contributor" in listed and "review_policy is contributors" in listed

    direct = compile_as(kb, tmp_path, rex, {"queue.md": NOTES["queue.md"]}, "more")
    assert direct.review is None and QUEUE in list_articles(kb)


def test_hand_edited_policy_holds_only_runs_that_merge_into_a_persons_edit(
    kb, fake_model, tmp_path
):
    set_policy(kb, 'review_policy = "hand-edited"\n')
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "cache.md").write_text(NOTES["cache.md"])
    assert run(kb, "compile", str(notes)).exit_code == 0  # no hand edit yet: not held
    assert CACHE in list_articles(kb)
    article = kb.root / CACHE
    text = article.read_text()
    heading = text.index("\n## ") + 1  # a line of her own under the first heading
    article.write_text(text[:heading] + "Ask Ana before changing it.\n\n" + text[heading:])
    git(kb, "add", CACHE)
    git(kb, "-c", "user.name=Ana", "-c", "user.email=ana@example.org", "commit", "-q", "-m", "x")
    (notes / "cache.md").write_text(NOTES["cache.md"] + "\nWe evict with LRU.\n")
    result = json.loads(run(kb, "compile", "--json", str(notes)).output)
    assert result["review"] and not result["held_review"], result
    (waiting,) = json.loads(run(kb, "review", "list", "--json").output)
    assert "hand-edited" in waiting["reason"]
    assert "LRU" not in article.read_text()  # main keeps the person's version meanwhile
    assert run(kb, "review", "approve", waiting["run"]).exit_code == 0
    text = article.read_text()
    assert "LRU" in text and "Ask Ana before changing it." in text


def test_single_articles_are_approved_and_rejected_with_comments(kb, fake_model, tmp_path):
    set_policy(kb, 'review_policy = "all"\n')
    compile_as(kb, tmp_path, add(kb, "Cora Contributor", "contributor"), NOTES)
    (waiting,) = json.loads(run(kb, "review", "list", "--json").output)
    shown = run(kb, "review", "show", waiting["run"]).output
    assert f"A {CACHE}" in shown and f"A {QUEUE}" in shown
    vera = open_kb(kb.root, actor=add(kb, "Vera Reviewer", "reviewer"))

    reviewing.approve(vera, waiting["run"], articles=[CACHE], comment="TTL checked with ops")
    assert CACHE in list_articles(kb) and QUEUE not in list_articles(kb)
    assert (kb.root / "raw" / "cache.md").exists()  # its source came with it
    assert "cache.md" in kb.master_index_path.read_text()
    newest = commit_messages(kb)[0]
    assert newest.startswith("Vera Reviewer|review: approved wiki/concept/cache.md")
    assert "TTL checked with ops" in newest
    assert json.loads(run(kb, "review", "list", "--json").output)  # the queue article waits

    long = run(kb, "review", "approve", waiting["run"], "--article", QUEUE, "--comment", "x" * 2001)
    assert long.exit_code == 2 and "2,000" in long.output and QUEUE not in list_articles(kb)
    again = run(kb, "review", "approve", waiting["run"], "--article", CACHE)
    assert again.exit_code == 2 and "approved already" in again.output
    unknown = run(kb, "review", "reject", waiting["run"], "--article", "wiki/x/nope.md")
    assert unknown.exit_code == 2 and "does not change wiki/x/nope.md" in unknown.output

    reviewing.reject(vera, waiting["run"], articles=[QUEUE], comment="4 workers is wrong")
    assert QUEUE not in list_articles(kb) and "queue.md" not in kb.master_index_path.read_text()
    assert run(kb, "review", "list", "--json").output.strip() == "[]"  # all decided: settled
    assert "review/" not in git(kb, "branch", "--list")
    assert "4 workers is wrong" in commit_messages(kb)[0]
    assert "4 workers is wrong" in kb.log_path.read_text()
    decisions = [
        (e.who, e.action, e.target, e.detail)
        for e in people.entries(vera)
        if e.action in ("approve", "reject")
    ]
    assert decisions == [
        ("Vera Reviewer", "approve", f"run {waiting['run']}: {CACHE}", "TTL checked with ops"),
        ("Vera Reviewer", "reject", f"run {waiting['run']}: {QUEUE}", "4 workers is wrong"),
    ]
    assert git(kb, "status", "--porcelain") == "" and run(kb, "lint").exit_code == 0


def test_rejecting_every_article_one_by_one_rejects_the_run(kb, fake_model, tmp_path):
    set_policy(kb, 'review_policy = "all"\n')
    compile_as(kb, tmp_path, add(kb, "Cora Contributor", "contributor"), NOTES)
    (waiting,) = json.loads(run(kb, "review", "list", "--json").output)
    first = run(kb, "review", "reject", waiting["run"], "--article", CACHE, "--comment", "no")
    assert first.exit_code == 0 and "Rejected wiki/concept/cache.md" in first.output
    rest = run(kb, "review", "reject", waiting["run"], "--article", QUEUE)
    assert rest.exit_code == 0 and "source(s) pending again" in rest.output, rest.output
    assert not {CACHE, QUEUE} & set(list_articles(kb))
    again = run(kb, "compile", "--json", "--no-review", str(tmp_path / "notes"))
    assert len(json.loads(again.output)["compiled"]) == 2  # its sources compile again


def test_a_whole_run_approved_with_a_comment_says_who_and_why(kb, fake_model, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "cache.md").write_text(NOTES["cache.md"])
    assert run(kb, "compile", "--review", str(notes)).exit_code == 0
    (waiting,) = json.loads(run(kb, "review", "list", "--json").output)
    done = run(kb, "review", "approve", waiting["run"], "--comment", "Looks right to me")
    assert done.exit_code == 0, done.output
    assert CACHE in list_articles(kb)
    assert "review: approved run" in commit_messages(kb)[0]
    assert "Looks right to me" in commit_messages(kb)[0]
    (entry,) = [e for e in people.entries(open_kb(kb.root, detect=False)) if e.action == "approve"]
    assert entry.detail == "Looks right to me" and entry.address == "cli"


def test_a_person_does_not_approve_their_own_run_unless_allowed(kb, fake_model, tmp_path):
    set_policy(kb, 'review_policy = "all"\n')
    rex = add(kb, "Rex Reviewer", "reviewer")
    compile_as(kb, tmp_path, rex, {"cache.md": NOTES["cache.md"]})
    (waiting,) = json.loads(run(kb, "review", "list", "--json").output)
    with pytest.raises(SelfReviewError, match="another reviewer") as refused:
        reviewing.approve(open_kb(kb.root, actor=rex), waiting["run"])
    assert "review_self_approve" in refused.value.hint
    with pytest.raises(SelfReviewError):
        reviewing.reject(open_kb(kb.root, actor=rex), waiting["run"], articles=[CACHE])
    assert CACHE not in list_articles(kb)  # nothing was done

    set_policy(kb, "review_self_approve = true\n")
    reviewing.approve(open_kb(kb.root, actor=rex), waiting["run"], comment="my own, allowed")
    assert CACHE in list_articles(kb)


def test_the_review_policy_setting_is_checked_and_the_old_switch_kept(kb):
    set_policy(kb, 'review_policy = "sometimes"\n')
    with pytest.raises(ConfigError, match="review_policy must be one of") as bad:
        load_settings(kb.root, environ={})
    assert "contributors" in str(bad.value)
    out = run(kb, "review", "list")
    assert out.exit_code != 0 and "review_policy must be one of" in out.output

    kb.config_path.write_text("review = true\n")
    assert load_settings(kb.root, environ={}).review_policy == "all"
    assert load_settings(kb.root, {"review": False}, environ={}).review_policy == "none"
    env = {"KB_AI_REVIEW_POLICY": "hand-edited"}
    kb.config_path.write_text("")
    assert load_settings(kb.root, environ=env).review_policy == "hand-edited"
    assert load_settings(kb.root, {"review": True}, environ=env).review_policy == "all"
    kb.config_path.write_text('review = true\nreview_policy = "contributors"\n')
    with pytest.raises(ConfigError, match="keep one of them"):
        load_settings(kb.root, environ={})
