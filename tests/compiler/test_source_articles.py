"""A small model's compile: each source one article in its own words, the model only
naming it (compiler/source_article.py). Through the CLI against the stand-in model over
HTTP, as a user with `small_model = true` (or the embedded model) would run it."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from compiler.source_article import BODY_MAX_CHARS
from kb_ai.cli import main
from tests.compiler.test_run import DNS_NOTE
from tests.fakes.kb_responder import stage_of
from tests.fakes.openai_server import Reply
from wiki import git, list_articles, read_article

DNS = DNS_NOTE  # a decision, with a heading, numbers and a list

QUEUE = """Job queue notes

Failed jobs are retried 5 times with exponential backoff, then moved to the dead letter
table. Workers poll every 2 seconds.
"""


@pytest.fixture
def small(fake_model, monkeypatch):
    monkeypatch.setenv("KB_AI_SMALL_MODEL", "true")
    return fake_model


def run(kb, *args):
    return CliRunner().invoke(main, ["--kb", str(kb.root), *args])


def compile_notes(kb, folder, **notes):
    folder.mkdir(exist_ok=True)
    for name, text in notes.items():
        (folder / f"{name}.md").write_text(text, encoding="utf-8")
    result = run(kb, "compile", "--json", str(folder))
    assert result.exit_code == 0, result.output
    return json.loads(result.output[result.output.index("{") :])


def lint(kb):
    result = run(kb, "lint", "--json")
    return result, json.loads(result.output)


def body_lines(text):
    return [line for line in text.splitlines() if line.strip() and not line.startswith("# ")]


def test_each_source_becomes_an_article_in_its_own_words_with_one_call(kb, small, tmp_path):
    report = compile_notes(kb, tmp_path / "notes", dns=DNS, queue=QUEUE)

    stages = [stage_of(r) for r in small.requests]
    assert stages == ["name", "name"]  # no classify, no write: one call per source
    assert sorted(report["created"]) == sorted(list_articles(kb)) and len(report["created"]) == 2
    dns = read_article(kb, next(p for p in report["created"] if "dns" in p))
    assert dns.title == "DNS moves out of the puppet module"  # the note's own heading
    assert dns.path.startswith("wiki/decision/")  # the type the model chose, from the enum
    assert body_lines(dns.body) == body_lines(DNS)  # every line the team wrote, nothing else
    assert dns.summary == "We decided to move DNS records out of the puppet module into Terraform."
    queue = read_article(kb, next(p for p in report["created"] if p != dns.path))
    assert "retried 5 times" in queue.body and queue.sources == ["raw/job-queue-notes.md"]
    # what the model said is kept beside the source, as any extraction
    naming = (kb.root / "extraction/job-queue-notes.md").read_text(encoding="utf-8")
    assert "type: concept" in naming or '"type": "concept"' in naming, naming
    # the wiki holds up: lint finds nothing unsupported, status nothing stale
    findings = lint(kb)[1]["findings"]
    assert [f for f in findings if f["severity"] == "error"] == [], findings
    assert not [f for f in findings if f["check"] == "unsupported"], findings
    status = run(kb, "status", "--json")
    assert status.exit_code == 0 and json.loads(status.output)["stale"]["lag"] == []
    assert git(kb, "log", "-1", "--format=%s").startswith("compile: 2 source(s), 2 created")


def test_what_the_model_invents_while_naming_does_not_reach_the_wiki(kb, small, tmp_path):
    small.queue(
        json.dumps(
            {
                "title": "Kubernetes migration by Marcus",
                "summary": "Marcus moved 9,000 DNS records to Kubernetes in 2019.",
                "type": "essay",
                "topics": ["dns", "a topic far longer than thirty characters in all"],
            }
        )
    )
    report = compile_notes(kb, tmp_path / "notes", queue=QUEUE)

    (path,) = report["created"]
    article = read_article(kb, path)
    # no heading in the note and an ungrounded proposal: kb-ai's own title of the source
    assert article.title == "Job queue notes"
    assert article.path.startswith("wiki/concept/")  # not an "essay": the first category
    assert "Marcus" not in article.summary and "9,000" not in article.summary
    assert article.summary.startswith("Failed jobs are retried 5 times")
    assert article.tags == ["dns"]
    assert "Marcus" not in kb.master_index_path.read_text()


def test_a_revised_source_replaces_its_article_and_a_removed_one_deletes_it(kb, small, tmp_path):
    notes = tmp_path / "notes"
    first = compile_notes(kb, notes, dns=DNS, queue=QUEUE)
    dns_path = next(p for p in first["created"] if "dns" in p)

    revised = compile_notes(kb, notes, dns=DNS.replace("4,000 lines", "6,500 lines"))
    assert revised["updated"] == [dns_path] and revised["created"] == []
    body = read_article(kb, dns_path).body
    assert "6,500 lines" in body and "4,000 lines" not in body

    (notes / "queue.md").unlink()
    result = run(kb, "compile", "--prune", str(notes))
    assert result.exit_code == 0, result.output
    assert list_articles(kb) == [dns_path]
    assert git(kb, "status", "--porcelain") == ""


def test_a_huge_source_keeps_its_beginning_and_links_the_rest(kb, small, tmp_path):
    paragraph = "The archive keeps every invoice for ten years in cold storage.\n\n"
    huge = "# Invoice archive\n\n" + paragraph * (2 * BODY_MAX_CHARS // len(paragraph))
    report = compile_notes(kb, tmp_path / "notes", archive=huge)

    article = read_article(kb, report["created"][0])
    assert len(article.body) < BODY_MAX_CHARS + 200
    assert article.body.rstrip().endswith("(The source goes on: [invoice-archive.md]"
                                          "(../../raw/invoice-archive.md).)")  # fmt: skip
    # the link resolves: lint reports no broken link, and the raw copy is whole
    assert not [f for f in lint(kb)[1]["findings"] if f["check"] == "broken-link"]
    assert (kb.root / "raw/invoice-archive.md").stat().st_size > len(huge)


def test_a_model_that_fails_naming_fails_the_source_and_writes_nothing(kb, small, tmp_path):
    small.queue(Reply("not json at all"), Reply("still not json"), Reply("{}"), Reply("[]"))
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "queue.md").write_text(QUEUE, encoding="utf-8")
    result = run(kb, "compile", str(folder))
    assert result.exit_code != 0
    assert "queue.md" in result.output
    assert list_articles(kb) == []
