"""Hand edits last: a person's change to an article survives the next compile of its
revised sources (a three-way merge against kb-ai's own last version), and where the two
overlap the article is held for review with both versions, main unchanged. Through the
CLI against the stand-in model over HTTP, in both the writing and the small-model mode."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kb_ai.cli import main
from wiki import git, read_article
from wiki.git import TRAILER

CACHE = "wiki/decision/cache.md"
A = "# Cache\n\nWe chose Redis for sessions. The TTL is 30 minutes.\n"
B = "# Cache\n\nThe cache runs on 3 replicas in Frankfurt.\n"
MINE = "Ask Priya Raman in #ops before anyone flushes the cache: a cold start costs 40 seconds."


def run(kb, *args):
    return CliRunner().invoke(main, ["--kb", str(kb.root), *args])


def compile_json(kb, folder):
    result = run(kb, "compile", "--json", str(folder))
    assert result.exit_code == 0, result.output
    return json.loads(result.output[result.output.index("{") :])


def write(folder, name, text):
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")


def commit_by_ann(kb, rel, text, message="Ops contact for the cache"):
    kb.resolve(rel).write_text(text, encoding="utf-8")
    ann = ("-c", "user.name=Ann Example", "-c", "user.email=ann@example.com")
    git(kb, *ann, "commit", "-q", "-am", message)
    return git(kb, "rev-parse", "--short", "HEAD").strip()


def text_of(kb, rel):
    return kb.resolve(rel, under="").read_text(encoding="utf-8")


@pytest.fixture
def cache_article(kb, fake_model, tmp_path):
    """The cache article fed by two notes (one section each, b's first), as kb-ai wrote
    it; a hand edit at its end is away from what a revision of b changes."""
    return build_cache_article(kb, tmp_path)


def build_cache_article(kb, tmp_path):
    notes = tmp_path / "notes"
    write(notes, "a.md", A)
    compile_json(kb, notes)
    write(notes, "b.md", B)
    compile_json(kb, notes)
    body = read_article(kb, CACHE).body
    assert body.index("## From raw/cache-2.md") < body.index("## From raw/cache.md")
    return notes


def test_a_sentence_added_by_hand_survives_revisions_of_the_source(kb, cache_article):
    notes = cache_article
    commit_by_ann(kb, CACHE, text_of(kb, CACHE).rstrip("\n") + f"\n\n{MINE}\n")

    write(notes, "b.md", B.replace("3 replicas", "5 replicas"))
    report = compile_json(kb, notes)
    assert report["updated"] == [CACHE] and report["held"] == []
    body = read_article(kb, CACHE).body
    assert MINE in body.splitlines()  # word for word, a line of its own
    assert "5 replicas" in body and "3 replicas" not in body and "30 minutes" in body
    assert any("kept the hand edit" in c and "by Ann Example" in c for c in report["checks"])
    # the compile's commit is kb-ai's; the article on main is the merge
    assert f"{TRAILER}: yes" in git(kb, "log", "-1", "--format=%B")
    assert MINE in git(kb, "show", f"HEAD:{CACHE}")
    # kb-ai's own version, without Ann's line, is the base of the next merge
    assert MINE not in text_of(kb, f"bases/{CACHE}")

    write(notes, "b.md", B.replace("3 replicas", "7 replicas"))  # and again
    report = compile_json(kb, notes)
    body = read_article(kb, CACHE).body
    assert MINE in body.splitlines() and "7 replicas" in body and "5 replicas" not in body
    assert any("by Ann Example" in c for c in report["checks"])
    # the person's words are theirs: lint does not hold them to the sources
    lint = json.loads(run(kb, "lint", "--json").output)
    assert lint["errors"] == 0 and not [f for f in lint["findings"] if f["path"] == CACHE]


def test_a_sentence_added_after_the_line_a_revision_changes_is_merged_not_held(kb, cache_article):
    """The issue's deploy article: a person's sentence at the end, right after the line
    the revised source changes. git's merge counts the two as one place; they touch
    different lines, so the update lands with the sentence kept word for word."""
    notes = cache_article
    before = text_of(kb, CACHE)
    assert before.rstrip("\n").endswith("30 minutes.")  # the last line is the one revised
    commit_by_ann(kb, CACHE, before.rstrip("\n") + f"\n\n{MINE}\n")

    write(notes, "a.md", A.replace("30 minutes", "45 minutes"))
    report = compile_json(kb, notes)
    assert report["updated"] == [CACHE] and report["held"] == []
    text = text_of(kb, CACHE)
    assert text.rstrip("\n").splitlines()[-1] == MINE  # word for word, where Ann put it
    assert "45 minutes" in text and "30 minutes" not in text
    assert any("kept the hand edit" in c for c in report["checks"])


def test_an_edit_overlapping_the_update_is_held_for_review_with_both_versions(kb, cache_article):
    notes = cache_article
    before = text_of(kb, CACHE)
    edited = before.replace("replicas in Frankfurt.", "replicas in Frankfurt and Paris.")
    assert edited != before
    sha = commit_by_ann(kb, CACHE, edited, "Paris too")
    main_before = git(kb, "rev-parse", "HEAD").strip()

    write(notes, "b.md", B.replace("3 replicas", "5 replicas"))
    result = run(kb, "compile", str(notes))
    assert result.exit_code == 0, result.output
    assert f"held     {CACHE}" in result.output
    # main: the person's version, in the file and in git
    assert text_of(kb, CACHE) == edited
    assert git(kb, "show", f"HEAD:{CACHE}") == edited
    assert git(kb, "diff", main_before, "HEAD", "--", "wiki") == ""
    # review: both versions, and who made the edit
    listed = json.loads(run(kb, "review", "list", "--json").output)
    (review,) = [r for r in listed if r["run"].endswith("-edits")]
    shown = run(kb, "review", "show", review["run"]).output
    assert "3 replicas in Frankfurt and Paris" in shown and "5 replicas in Frankfurt." in shown
    assert f"{sha} by Ann Example" in shown
    # lint lists it
    lint = json.loads(run(kb, "lint", "--json").output)
    assert [f["path"] for f in lint["findings"] if f["check"] == "hand-edit"] == [CACHE]
    # approving takes kb-ai's update onto main
    assert run(kb, "review", "approve", review["run"]).exit_code == 0
    assert "5 replicas" in read_article(kb, CACHE).body
    assert "Paris" not in read_article(kb, CACHE).body
    lint = json.loads(run(kb, "lint", "--json").output)
    assert not [f for f in lint["findings"] if f["check"] == "hand-edit"]


def test_a_revision_contradicting_a_hand_written_sentence_is_held(kb, cache_article):
    notes = cache_article
    mine = "Each of the 3 replicas holds a full copy of the sessions."
    edited = commit_by_ann(kb, CACHE, text_of(kb, CACHE).rstrip("\n") + f"\n\n{mine}\n")
    assert edited
    before = text_of(kb, CACHE)

    write(notes, "b.md", B.replace("3 replicas", "5 replicas"))  # the source now says 5
    report = compile_json(kb, notes)
    assert report["held"] == [CACHE] and report["updated"] == []
    assert text_of(kb, CACHE) == before  # never overwritten
    (review,) = [r for r in json.loads(run(kb, "review", "list", "--json").output)]
    assert "no longer states 3," in review["summary"]
    # rejecting keeps the person's version and compiles nothing again
    assert run(kb, "review", "reject", review["run"]).exit_code == 0
    assert text_of(kb, CACHE) == before
    assert compile_json(kb, notes)["compiled"] == []


DEPLOY = """# How to deploy the invoice service

Build the image with `make release` and push it to the registry.

The deploy takes 15 minutes and runs from the release pipeline.

Roll back with `make rollback` if the health check fails.

The payments team owns the service.
"""


@pytest.fixture
def small(fake_model, monkeypatch):
    monkeypatch.setenv("KB_AI_SMALL_MODEL", "true")
    return fake_model


def test_small_model_mode_keeps_a_hand_edit_too(kb, small, tmp_path):
    notes = tmp_path / "notes"
    write(notes, "deploy.md", DEPLOY)
    (path,) = compile_json(kb, notes)["created"]
    mine = "Tell the support desk in #invoices before you start."
    commit_by_ann(kb, path, text_of(kb, path).rstrip("\n") + f"\n\n{mine}\n")

    write(notes, "deploy.md", DEPLOY.replace("15 minutes", "20 minutes"))
    report = compile_json(kb, notes)
    assert report["updated"] == [path]
    body = read_article(kb, path).body
    assert mine in body.splitlines() and "20 minutes" in body and "15 minutes" not in body

    # an overlapping edit is held, and main keeps it
    edited = text_of(kb, path).replace("runs from the release pipeline", "runs from Jenkins")
    commit_by_ann(kb, path, edited, "It runs from Jenkins now")
    write(notes, "deploy.md", DEPLOY.replace("15 minutes", "25 minutes"))
    report = compile_json(kb, notes)
    assert report["held"] == [path] and text_of(kb, path) == edited
    assert git(kb, "show", f"HEAD:{path}") == edited


def test_an_uncommitted_hand_edit_becomes_its_own_commit_not_kb_ais(kb, small, tmp_path):
    notes = tmp_path / "notes"
    write(notes, "deploy.md", DEPLOY)
    (path,) = compile_json(kb, notes)["created"]
    mine = "Tell the support desk in #invoices before you start."
    kb.resolve(path).write_text(text_of(kb, path).rstrip("\n") + f"\n\n{mine}\n")

    write(notes, "deploy.md", DEPLOY.replace("15 minutes", "20 minutes"))
    compile_json(kb, notes)
    assert mine in read_article(kb, path).body.splitlines()
    out = git(kb, "log", "-2", "--format=%s%x1f%(trailers:key=Kb-Ai-Commit,valueonly)%x1e")
    (compile_subject, compile_trailer), (edit_subject, edit_trailer) = [
        r.strip("\n").split("\x1f") for r in out.split("\x1e")[:2]
    ]
    assert compile_subject.startswith("compile:") and compile_trailer.strip() == "yes"
    assert edit_subject.startswith("Hand edits found in wiki/") and edit_trailer.strip() == ""


def test_removing_a_source_never_drops_a_hand_edit_unseen(kb, cache_article):
    mine = "Ask Priya in the ops channel before anyone flushes the cache by hand."
    commit_by_ann(kb, CACHE, text_of(kb, CACHE).rstrip("\n") + f"\n\n{mine}\n")
    edited = text_of(kb, CACHE)

    result = run(kb, "rm", "raw/cache.md", "--json")  # a.md: the section beside the edit
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["held"] == [CACHE] and report["rewritten"] == []
    assert text_of(kb, CACHE) == edited  # the person's version stays on main
    shown = run(kb, "review", "show", report["held_review"][7:]).output
    person, kb_ai = shown.split(f"=== {CACHE}: kb-ai's new version", 1)
    kb_ai = kb_ai.split("=== what approve puts on main")[0]
    assert mine in person and "30 minutes" in person  # the hand edit, as on main
    assert "30 minutes" not in kb_ai and "Frankfurt" in kb_ai  # kb-ai's, without a.md


@pytest.fixture
def writer_uses_the_edit(monkeypatch):
    """The stand-in model, whose writer, writing the revision of b.md (5 replicas), opens
    the article with a sentence of its own stating only what Ann's line states, and
    (misbehaving) repeats her line word for word when it is given it as material."""
    from tests.conftest import serve_model
    from tests.fakes.kb_responder import respond, stage_of
    from tests.fakes.openai_server import Reply

    def responder(request):
        reply = respond(request)
        prompt = request["messages"][-1]["content"]
        if stage_of(request) == "write" and "5 replicas" in prompt:
            data = json.loads(reply.content)
            data["body"] = f"{USES}\n\n" + data["body"].strip() + "\n"
            if "Material from edit:" in prompt:
                data["body"] += f"\n{MINE}\n"
            return Reply(json.dumps(data))
        return reply

    yield from serve_model(monkeypatch, responder)


USES = "Priya Raman approves every flush in #ops, since a cold start costs 40 seconds."


def with_ann_and_b_revised(kb, tmp_path, *, edit: bool):
    """The cache article; Ann's line at its end (when ``edit``); then b.md revised."""
    notes = build_cache_article(kb, tmp_path)
    sha = None
    if edit:
        sha = commit_by_ann(kb, CACHE, text_of(kb, CACHE).rstrip("\n") + f"\n\n{MINE}\n")
    write(notes, "b.md", B.replace("3 replicas", "5 replicas"))
    return sha, compile_json(kb, notes)


def test_a_persons_lines_are_grounded_material_cited_by_their_commit(
    kb, writer_uses_the_edit, tmp_path
):
    sha, report = with_ann_and_b_revised(kb, tmp_path, edit=True)
    assert report["updated"] == [CACHE] and report["held"] == []
    # the writer was given Ann's line as material, named by her commit
    (prompt,) = [
        r["messages"][-1]["content"]
        for r in writer_uses_the_edit.requests
        if "Material from edit:" in r["messages"][-1]["content"]
    ]
    assert f"Material from edit:{sha} (a person's own lines" in prompt and MINE in prompt
    article = read_article(kb, CACHE)
    # a sentence stating only what Ann wrote (her name, #ops, 40 seconds) is grounded:
    # the checks kept it; her own line, repeated by the model, is there once
    assert USES in article.body.splitlines()
    assert article.body.count(MINE) == 1 and MINE in article.body.splitlines()
    assert "5 replicas" in article.body and "3 replicas" not in article.body
    assert not [c for c in report["checks"] if "ungrounded" in c]
    # her commit is cited beside the sources, and the sources stay raw copies
    assert article.edits == [f"{sha} by Ann Example"]
    assert sorted(article.sources) == ["raw/cache-2.md", "raw/cache.md"]


def test_without_the_persons_lines_as_material_that_sentence_is_ungrounded(
    kb, writer_uses_the_edit, tmp_path
):
    """The same model, with no hand edit to draw on: its sentence about Priya Raman
    states what no material says, and the checks take it out."""
    _, report = with_ann_and_b_revised(kb, tmp_path, edit=False)
    article = read_article(kb, CACHE)
    assert "5 replicas" in article.body and "Priya Raman" not in article.body
    assert any("ungrounded" in c and "Priya Raman" in c for c in report["checks"])
    assert article.edits == []


def deploy_article(kb, tmp_path):
    """The deploy how-to compiled alone: its article's path and its one raw source."""
    write(tmp_path / "notes", "deploy.md", DEPLOY)
    (path,) = compile_json(kb, tmp_path / "notes")["created"]
    (raw,) = read_article(kb, path).sources
    return path, raw


def test_an_article_whose_last_source_leaves_is_held_while_it_holds_a_persons_lines(
    kb, fake_model, tmp_path
):
    path, raw = deploy_article(kb, tmp_path)
    mine = "Tell the support desk in #invoices before you start."
    sha = commit_by_ann(kb, path, text_of(kb, path).rstrip("\n") + f"\n\n{mine}\n")
    edited = text_of(kb, path)

    result = run(kb, "rm", raw, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["deleted"] == [] and report["held"] == [path]
    assert not kb.resolve(raw, under="").exists()  # the source itself went, as asked
    assert text_of(kb, path) == edited and git(kb, "show", f"HEAD:{path}") == edited
    run_id = report["held_review"].removeprefix("review/")
    shown = run(kb, "review", "show", run_id).output
    assert mine in shown and f"{sha} by Ann Example" in shown
    assert "kb-ai would delete this article" in shown
    lint = json.loads(run(kb, "lint", "--json").output)
    assert [f["path"] for f in lint["findings"] if f["check"] == "hand-edit"] == [path]
    # approving deletes it (and only then)
    assert run(kb, "review", "approve", run_id).exit_code == 0
    assert not kb.resolve(path, under="").exists()
    assert git(kb, "ls-tree", "--name-only", "HEAD", "--", path).strip() == ""
    assert path not in run(kb, "list").output


def test_without_a_persons_lines_an_article_whose_last_source_leaves_is_deleted(
    kb, fake_model, tmp_path
):
    path, raw = deploy_article(kb, tmp_path)
    report = json.loads(run(kb, "rm", raw, "--json").output)
    assert report["deleted"] == [path] and report["held"] == []
    assert not kb.resolve(path, under="").exists()


def test_a_value_revised_in_its_line_contradicts_the_persons_sentence_though_said_elsewhere(
    kb, fake_model, tmp_path
):
    """30 stays in the article (30 sessions), but the line that said the TTL is 30
    minutes now says 45: Ann's sentence about a 30-minute TTL is contradicted, and held."""
    notes = tmp_path / "notes"
    cache = (
        "# Cache\n\nThe cache keeps 30 sessions per node. It runs on Redis in Frankfurt. "
        "Each node has 16 GB of memory. The TTL is 30 minutes.\n"
    )
    write(notes, "cache.md", cache)
    (path,) = compile_json(kb, notes)["created"]
    lines = text_of(kb, path).split("\n")
    at = lines.index("## From raw/cache.md") + 1  # far from the line the revision changes
    mine = "Keep the TTL at 30 minutes while the load tests run."
    commit_by_ann(kb, path, "\n".join([*lines[:at], "", mine, *lines[at:]]))
    before = text_of(kb, path)

    write(notes, "cache.md", cache.replace("TTL is 30 minutes", "TTL is 45 minutes"))
    report = compile_json(kb, notes)
    assert report["held"] == [path] and text_of(kb, path) == before
    (review,) = json.loads(run(kb, "review", "list", "--json").output)
    assert "no longer states 30, which the hand edit says" in review["summary"]


def test_an_article_its_source_leaves_in_a_compile_is_held_while_it_holds_a_persons_lines(
    kb, fake_model, tmp_path
):
    """a.md rewritten on another subject leaves the cache article, which has no other
    source: with Ann's line in it, the compile holds it instead of deleting it."""
    notes = tmp_path / "notes"
    write(notes, "a.md", A)
    (path,) = compile_json(kb, notes)["created"]
    commit_by_ann(kb, path, text_of(kb, path).rstrip("\n") + f"\n\n{MINE}\n")
    edited = text_of(kb, path)

    write(notes, "a.md", "# Billing\n\nInvoices go out on the first working day of the month.\n")
    report = compile_json(kb, notes)
    assert report["deleted"] == [] and report["held"] == [path]
    assert len(report["created"]) == 1  # the billing article
    assert text_of(kb, path) == edited and git(kb, "show", f"HEAD:{path}") == edited
    (review,) = json.loads(run(kb, "review", "list", "--json").output)
    assert "its last source left" in review["summary"]
    shown = run(kb, "review", "show", review["run"]).output
    assert MINE in shown and "kb-ai would delete this article" in shown
