"""A document's identity is not its path: a revision compiled from another folder, under
another name, after a git rename, or said to revise a source, replaces that source and
updates its article; it never adds a second article. Through the CLI, with the stand-in
model server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from click.testing import CliRunner

from kb_ai.cli import main
from tests.fakes.kb_responder import stage_of
from wiki import list_articles, list_raw, read_article

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "notes"
DEPLOY = (EXAMPLES / "deploy-howto.md").read_text(encoding="utf-8")
TITLE = "How to deploy the invoice service"
RAW = "raw/how-to-deploy-the-invoice-service.md"


def compile_cli(kb, *args, code=0):
    result = CliRunner().invoke(main, ["--kb", str(kb.root), "compile", *map(str, args)])
    assert result.exit_code == code, result.output
    return result


def compile_json(kb, *args, code=0):
    out = compile_cli(kb, "--json", *args, code=code).output
    return json.loads(out.strip().splitlines()[-1])


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def titled(kb, title=TITLE):
    return [a for a in (read_article(kb, p) for p in list_articles(kb)) if a.title == title]


def the_deploy_article(kb):
    found = titled(kb)
    assert len(found) == 1, [a.path for a in found]
    return found[0]


def test_a_revision_from_another_folder_updates_the_one_article(kb, fake_model, tmp_path):
    compile_cli(kb, write(tmp_path / "a" / "deploy-howto.md", DEPLOY))
    revised = DEPLOY.replace("15 minutes", "20 minutes")
    out = compile_cli(kb, write(tmp_path / "b" / "deploy-howto.md", revised)).output
    article = the_deploy_article(kb)
    assert "20 minutes" in article.body and "15 minutes" not in article.body
    assert list_raw(kb) == [RAW] and article.sources == [RAW]
    assert f"revised  {RAW} (file name and title)" in out
    # the old folder, unchanged, is not a newer revision: it is skipped, and 20 stays
    again = compile_json(kb, tmp_path / "a")
    assert again["skipped"] and not again["compiled"]
    assert "20 minutes" in the_deploy_article(kb).body


def test_nearly_the_same_text_under_another_name_and_title_is_a_revision(kb, fake_model, tmp_path):
    compile_cli(kb, write(tmp_path / "a" / "deploy-howto.md", DEPLOY))
    renamed = DEPLOY.replace(f"# {TITLE}", "# Deploying invoices").replace("15 min", "25 min")
    summary = compile_json(kb, write(tmp_path / "b" / "invoices-deploy.md", renamed))
    assert summary["revisions"][0]["way"] == "text"
    assert summary["revisions"][0]["similarity"] >= 0.7
    assert list_raw(kb) == [RAW] and not summary["created"]
    (article,) = [read_article(kb, p) for p in list_articles(kb)]
    assert "25 minutes" in article.body and "15 minutes" not in article.body


def test_a_kb_id_in_the_frontmatter_says_which_source_it_revises(kb, fake_model, tmp_path):
    compile_cli(kb, write(tmp_path / "a" / "deploy-howto.md", DEPLOY))
    rewritten = (
        "---\nkb-id: how-to-deploy-the-invoice-service\n---\n# Shipping invoices\n\n"
        "Releases now go out through Argo CD; the error rate is watched for 45 minutes.\n"
    )
    summary = compile_json(kb, write(tmp_path / "elsewhere" / "shipping.md", rewritten))
    assert [r["way"] for r in summary["revisions"]] == ["kb-id"]
    assert list_raw(kb) == [RAW] and not summary["created"]
    (article,) = [read_article(kb, p) for p in list_articles(kb)]
    assert "45 minutes" in article.body and "15 minutes" not in article.body


def test_compile_revises_names_the_source_a_file_revises(kb, fake_model, tmp_path):
    compile_cli(kb, write(tmp_path / "a" / "deploy-howto.md", DEPLOY))
    other = write(
        tmp_path / "b" / "release.md", "# Release steps\n\nWatch errors for 50 minutes.\n"
    )
    summary = compile_json(kb, "--revises", "how-to-deploy-the-invoice-service", other)
    assert [r["way"] for r in summary["revisions"]] == ["kb-id"]
    assert list_raw(kb) == [RAW]
    (article,) = [read_article(kb, p) for p in list_articles(kb)]
    assert "50 minutes" in article.body


def test_a_revises_that_names_no_source_is_an_error_that_says_so(kb, fake_model, tmp_path):
    compile_cli(kb, write(tmp_path / "a" / "deploy-howto.md", DEPLOY))
    note = write(tmp_path / "b" / "note.md", "---\nkb-id: no-such-source\n---\n# Note\n\nText.\n")
    result = compile_cli(kb, note, code=1)
    assert "'no-such-source' names no source of this knowledge base" in result.output
    assert list_raw(kb) == [RAW] and len(list_articles(kb)) == 1  # nothing half-written
    flag = compile_cli(kb, "--revises", "nothing-here", tmp_path / "a" / "deploy-howto.md", code=1)
    assert "'nothing-here' names no source" in flag.output


def test_revises_with_more_than_one_document_is_refused(kb, fake_model, tmp_path):
    write(tmp_path / "two" / "a.md", "# A\n\nOne.\n")
    write(tmp_path / "two" / "b.md", "# B\n\nTwo.\n")
    result = compile_cli(kb, "--revises", "x", tmp_path / "two", code=2)
    assert "--revises names the source one document revises" in result.output


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=T", "-c", "user.email=t@example.org", *args],
        check=True,
        capture_output=True,
    )


def test_a_file_renamed_in_git_is_the_same_document(kb, fake_model, tmp_path):
    repo = tmp_path / "notes"
    write(repo / "deploy-howto.md", DEPLOY)
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "notes")
    compile_cli(kb, repo)
    git(repo, "mv", "deploy-howto.md", "shipping.md")
    git(repo, "commit", "-qm", "rename")
    # renamed, retitled and rewritten past what text similarity would take for the same
    write(
        repo / "shipping.md", "# Shipping\n\nWe ship with Argo CD now; watch errors 35 minutes.\n"
    )
    git(repo, "commit", "-qam", "rewrite")
    summary = compile_json(kb, repo)
    assert [r["way"] for r in summary["revisions"]] == ["git rename"]
    assert list_raw(kb) == [RAW] and not summary["created"]
    (article,) = [read_article(kb, p) for p in list_articles(kb)]
    assert "35 minutes" in article.body


def test_text_in_between_is_a_new_source_the_run_names(kb, fake_model, tmp_path):
    compile_cli(kb, write(tmp_path / "a" / "deploy-howto.md", DEPLOY))
    half = DEPLOY.split("Rolling back:")[0] + (
        "Rolling forward is the rule here: a fix goes out as a new release through the same "
        "workflow, reviewed like any other change, and the on-call engineer writes a short "
        "note in the incident channel saying which release fixed what and why.\n"
    )
    out = compile_cli(kb, write(tmp_path / "b" / "deploy-notes.md", half)).output
    assert len(list_raw(kb)) == 2  # not taken as a revision: a new source ...
    assert f"may revise {RAW}" in out  # ... that the run names
    assert "kb-ai compile --revises how-to-deploy-the-invoice-service" in out


def test_text_in_between_under_a_new_title_adds_no_second_article(kb, fake_model, tmp_path):
    """A new source that may revise one (named, as above) goes into that source's
    article, even when its heading changed and classify would make it an article of
    its own: what an unconfirmed revision says does not become a second article."""
    compile_cli(kb, write(tmp_path / "a" / "deploy-howto.md", DEPLOY))
    (before,) = list_articles(kb)
    retitled = "# Shipping invoices to production\n\n" + DEPLOY.split("\n", 1)[1].split(
        "Rolling back:"
    )[0].replace("15 minutes", "25 minutes")
    summary = compile_json(kb, write(tmp_path / "b" / "shipping.md", retitled))
    (maybe,) = summary["maybe_revisions"]
    assert maybe["candidates"][0]["raw_path"] == RAW and len(list_raw(kb)) == 2
    assert summary["created"] == [] and summary["updated"] == [before]
    assert list_articles(kb) == [before]
    article = read_article(kb, before)
    assert sorted(article.sources) == sorted([RAW, maybe["raw_path"]])
    assert "25 minutes" in article.body
    # saying so afterwards folds it in: one source, one article
    compile_json(kb, "--revises", "how-to-deploy-the-invoice-service", tmp_path / "b")
    assert list_raw(kb) == [RAW] and list_articles(kb) == [before]


def test_two_revisions_in_one_run_are_named_not_merged(kb, fake_model, tmp_path):
    """Two versions of one document in one run: which is current is not known, so the
    second is a new source the run names."""
    write(tmp_path / "a" / "deploy-howto.md", DEPLOY)
    write(tmp_path / "b" / "deploy-howto.md", DEPLOY.replace("15 minutes", "20 minutes"))
    summary = compile_json(kb, tmp_path / "a", tmp_path / "b")
    (maybe,) = summary["maybe_revisions"]
    assert maybe["candidates"][0]["raw_path"] == RAW
    assert "this run compiles another revision of it" in maybe["reason"]


def test_one_name_and_title_with_unrelated_text_is_not_a_revision(kb, fake_model, tmp_path):
    write(tmp_path / "2026-03-02" / "notes.md", "# Weekly sync\n\nPriya ships the queue.\n")
    compile_cli(kb, tmp_path / "2026-03-02")
    later = "# Weekly sync\n\nThe billing export moves to Thursday; Tom owns the dashboards.\n"
    summary = compile_json(kb, write(tmp_path / "2026-03-09" / "notes.md", later))
    assert not summary["revisions"] and len(list_raw(kb)) == 2
    (maybe,) = summary["maybe_revisions"]
    assert "file name and title, but other text" in maybe["reason"]


def test_saying_so_afterwards_folds_the_new_source_into_the_one_it_revises(
    kb, fake_model, tmp_path
):
    compile_cli(kb, write(tmp_path / "a" / "deploy-howto.md", DEPLOY))
    notes = write(
        tmp_path / "b" / "deploy-notes.md", "# Deploy notes\n\nWatch errors 55 minutes.\n"
    )
    compile_cli(kb, notes)
    assert len(list_raw(kb)) == 2  # a new source, as nothing said otherwise
    summary = compile_json(kb, "--revises", "how-to-deploy-the-invoice-service", notes)
    assert summary["superseded"] == [{"raw_path": "raw/deploy-notes.md", "by": RAW}]
    assert list_raw(kb) == [RAW]  # its own copy from before went, in a commit of its own
    bodies = " ".join(read_article(kb, p).body for p in list_articles(kb))
    assert "55 minutes" in bodies and "15 minutes" not in bodies
    assert all(read_article(kb, p).sources == [RAW] for p in list_articles(kb))


def test_two_copies_of_one_text_in_one_run_are_one_source(kb, fake_model, tmp_path):
    write(tmp_path / "a" / "deploy-howto.md", DEPLOY)
    write(tmp_path / "b" / "deploy-howto-copy.md", DEPLOY)
    summary = compile_json(kb, tmp_path / "a", tmp_path / "b")
    assert list_raw(kb) == [RAW] and len(titled(kb)) == 1 and len(list_articles(kb)) == 1
    # the model is asked about the text once: the second copy's extraction is not asked
    # for, although every source's is asked as soon as it is read
    assert [stage_of(r) for r in fake_model.requests].count("extract") == 1
    (copy,) = summary["revisions"]
    assert copy["raw_path"] == RAW and copy["way"] == "the same text, a copy in this run"
    assert copy["origin"].endswith("deploy-howto-copy.md")
    assert len(summary["compiled"]) == 2 and summary["maybe_revisions"] == []
    # both files are that source now: unchanged next time, and a revision of the copy
    # revises it (no second article)
    assert compile_json(kb, tmp_path / "a", tmp_path / "b")["compiled"] == []
    write(tmp_path / "b" / "deploy-howto-copy.md", DEPLOY.replace("15 minutes", "20 minutes"))
    again = compile_json(kb, tmp_path / "b")
    assert list_raw(kb) == [RAW] and again["created"] == [] and len(again["updated"]) == 1
    assert "20 minutes" in titled(kb)[0].body


def test_a_file_revised_in_place_under_a_new_heading_keeps_its_article(kb, fake_model, tmp_path):
    """The same file, its heading changed as well as a value: its article is updated
    (title and path kept), not replaced by a second one."""
    note = write(tmp_path / "a" / "deploy-howto.md", DEPLOY)
    compile_cli(kb, note)
    (before,) = list_articles(kb)
    write(note, DEPLOY.replace(f"# {TITLE}", "# Shipping invoices").replace("15 min", "20 min"))
    summary = compile_json(kb, note)
    assert summary["created"] == [] and summary["updated"] == [before] and not summary["deleted"]
    assert list_articles(kb) == [before]
    article = read_article(kb, before)
    assert article.title == TITLE and "20 minutes" in article.body
