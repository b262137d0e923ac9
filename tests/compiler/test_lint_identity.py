"""Lint of a wiki where one document became several (as kb-ai made them before a
document had an identity): the same title three times, the values they disagree on,
sources alike; `kb-ai lint --fix` merges them into the newest revision, in one commit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from compiler.identity_index import SourceIndex
from kb_ai.cli import main
from wiki import git, list_articles, list_raw, read_article

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "notes"
DEPLOY = (EXAMPLES / "deploy-howto.md").read_text(encoding="utf-8")
TITLE = "How to deploy the invoice service"


@pytest.fixture
def small(fake_model, monkeypatch):
    """The embedded model's way (an article per source), which made -2 and -3."""
    monkeypatch.setenv("KB_AI_SMALL_MODEL", "true")
    return fake_model


def run(kb, *args, code=0):
    result = CliRunner().invoke(main, ["--kb", str(kb.root), *map(str, args)])
    assert result.exit_code == code, result.output
    return result


def lint_json(kb, *args, code=0):
    return json.loads(run(kb, "lint", "--json", *args, code=code).output.strip().splitlines()[-1])


@pytest.fixture
def three_copies(kb, small, tmp_path, monkeypatch):
    """The deploy how-to at 15, 20 and 30 minutes, compiled from three folders by a kb-ai
    that knew sources only by path (identity switched off, as before issue 25)."""
    monkeypatch.setattr(SourceIndex, "identify", lambda self, src, arrival=None: None)
    for folder, minutes in (("a", 15), ("b", 20), ("c", 30)):
        note = tmp_path / folder / "deploy-howto.md"
        note.parent.mkdir()
        note.write_text(DEPLOY.replace("15 minutes", f"{minutes} minutes"), encoding="utf-8")
        run(kb, "compile", note)
    monkeypatch.undo()
    monkeypatch.setenv("KB_AI_SMALL_MODEL", "true")
    titled = [p for p in list_articles(kb) if read_article(kb, p).title == TITLE]
    assert len(titled) == 3  # the wiki of the issue
    return kb


def test_lint_lists_duplicate_titles_disagreements_and_sources_alike(three_copies):
    report = lint_json(three_copies)
    checks = {}
    for f in report["findings"]:
        checks.setdefault(f["check"], []).append(f)
    assert len(checks["duplicate-title"]) == 2
    assert all(f["fixable"] for f in checks["duplicate-title"])
    disagreements = " ".join(f["message"] for f in checks["undated-disagreement"])
    assert "20 minutes" in disagreements and "15 minutes" in disagreements
    alike = checks["revision-alike"]
    assert len(alike) == 3  # every pair of the three copies
    assert "--revises how-to-deploy-the-invoice-service" in alike[0]["message"]


def test_lint_fix_merges_them_into_the_newest_in_one_commit(three_copies):
    kb = three_copies
    before = git(kb, "rev-list", "--count", "HEAD").strip()
    report = lint_json(kb, "--fix")
    assert git(kb, "rev-list", "--count", "HEAD").strip() == str(int(before) + 1)
    assert "merged 2 duplicate article(s)" in git(kb, "log", "-1", "--format=%B")
    (article,) = [read_article(kb, p) for p in list_articles(kb)]
    assert article.title == TITLE and "30 minutes" in article.body
    assert list_raw(kb) == article.sources  # the older raw copies went with their articles
    assert not [
        f for f in report["findings"] if f["check"] in ("duplicate-title", "revision-alike")
    ]
    # every folder compiled before is known as that one source: nothing comes back
    again = run(kb, "compile", "--json", *(kb.root.parent / f for f in ("a", "b", "c")))
    summary = json.loads(again.output.strip().splitlines()[-1])
    assert not summary["created"] and len(list_articles(kb)) == 1


def test_the_health_page_lists_them_too(three_copies, settings):
    from tests.web.conftest import Model, make_client

    with make_client(settings, Model(), start_worker=False) as client:
        page = client.get("/health").text
    assert 'data-check="duplicate-title"' in page and 'data-check="revision-alike"' in page


def test_lint_fix_keeps_a_duplicate_that_holds_a_persons_lines(three_copies):
    """A person's sentence in an older copy is never deleted by --fix: that copy stays,
    named, and the others are merged as before."""
    kb = three_copies
    titled = sorted(
        (p for p in list_articles(kb) if read_article(kb, p).title == TITLE),
        key=lambda p: "15 minutes" not in read_article(kb, p).body,
    )
    oldest = titled[0]
    assert "15 minutes" in read_article(kb, oldest).body
    mine = "Ask in #deploys before a production run on a Thursday."
    file = kb.resolve(oldest)
    file.write_text(file.read_text(encoding="utf-8").rstrip("\n") + f"\n\n{mine}\n")
    git(kb, "-c", "user.name=Bob Ops", "-c", "user.email=bob@example.com",
        "commit", "-qam", "The Thursday rule")  # fmt: skip
    report = lint_json(kb, "--fix")
    assert mine in read_article(kb, oldest).body.splitlines()  # still in the wiki
    left = sorted(p for p in list_articles(kb) if read_article(kb, p).title == TITLE)
    assert len(left) == 2 and oldest in left  # the 20-minute copy merged, Bob's kept
    (named,) = [f for f in report["findings"] if f["check"] == "duplicate-title"]
    assert oldest == named["path"] or oldest in named["message"]
    assert "by Bob Ops" in named["message"] and not named["fixable"]


def test_links_to_a_merged_copy_lead_to_the_article_kept(three_copies):
    """A person's article linked to the older copies (a wikilink and a Markdown link):
    after --fix they lead to the copy kept, not to nothing and not turned into plain
    text, and the article is still the person's."""
    import posixpath

    from compiler.hand_edits import person_lines
    from wiki.articles import Article, write_article
    from wiki.hand_edits import find_hand_edit

    kb = three_copies
    titled = [p for p in list_articles(kb) if read_article(kb, p).title == TITLE]
    (kept,) = [p for p in titled if "30 minutes" in read_article(kb, p).body]
    older = sorted(p for p in titled if p != kept)
    folder = posixpath.dirname(kept)
    mine = f"{folder}/release-checklist.md"
    slug = posixpath.basename(older[0])[:-3]
    relative = posixpath.relpath(older[1], folder)
    body = (
        "# Release checklist\n\n"
        f"Deploy as [[{slug}|the deploy how-to]] says; the older notes are in"
        f" [the other how-to]({relative}#steps).\n\n"
        f"Write `[[{slug}]]` to link it.\n\n"
        "Watch the dashboards for an hour after a release.\n"
    )
    model = read_article(kb, kept)
    write_article(kb, Article(mine, "Release checklist", model.type, "What to do on a release.",
                              [], [], model.created, model.updated, body))  # fmt: skip
    git(kb, "add", mine)
    git(kb, "-c", "user.name=Bob Ops", "-c", "user.email=bob@example.com",
        "commit", "-qm", "A release checklist")  # fmt: skip

    report = lint_json(kb, "--fix")
    assert list_articles(kb) == sorted([kept, mine])
    text = read_article(kb, mine).body
    kept_slug = posixpath.basename(kept)[:-3]
    assert f"[[{kept_slug}|the deploy how-to]]" in text
    assert f"[the other how-to]({posixpath.basename(kept)}#steps)" in text
    assert f"`[[{slug}]]`" in text  # code is never rewritten
    assert not [f for f in report["findings"] if f["check"].startswith("dead-")]
    assert not [f for f in report["fixed"] if f["check"].startswith("dead-")]
    assert f"links in {mine} lead to the article kept" in git(kb, "log", "-1", "--format=%B")
    hand = find_hand_edit(kb, mine)  # still Bob's article, not kb-ai's
    assert hand is not None and "by Bob Ops" in hand.by()
    assert "Watch the dashboards for an hour after a release." in person_lines(hand)
