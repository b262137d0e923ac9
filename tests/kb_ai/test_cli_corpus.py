"""`kb-ai corpus` and `kb-ai ask --corpus` end to end: the real CLI over a wiki compiled
against the stand-in model server (OpenAI wire format over loopback HTTP)."""

import json

import pytest
from click.testing import CliRunner

from kb_ai.cli import main
from tests.conftest import compile_notes
from tests.fakes.kb_responder import stage_of
from tests.fakes.openai_server import Reply
from wiki import KnowledgeBase, git, read_article

NOTES = {
    "worker-retries.md": "# Worker retries\n\nWe decided that the worker retries a failed "
    "capture with backoff. A capture failed twenty times in a row while the spool was locked.\n",
    "worker-leases.md": "# Worker leases\n\nWe decided that a worker holds a task lease of ten "
    "minutes. Two workers compiled the same session while the lease was missing.\n",
    "dns.md": "# DNS out of puppet\n\nWe decided to move DNS records out of the puppet module "
    "into Terraform. Puppet runs took twenty minutes for every record change.\n",
    "backups.md": "# Nightly backups\n\nBackups of the main database run nightly at 02:00. "
    "Backup copies are kept for thirty days in a separate account.\n",
}
HOOKS_CHAT = """\
# Chat about the stop hook

**User:** Why does the stop hook time out in kb_ai/hooks/run.py on every session end?

**Assistant:** The stop hook waited on the compile lock before it returned. Writing the
record to the spool and exiting at once removed the timeout.

**User:** Keep the hook that small from now on.

**Assistant:** Agreed: the hook only appends to the spool.
"""
RETRIES = "wiki/decision/worker-retries.md"
LEASES = "wiki/decision/worker-leases.md"
DNS = "wiki/decision/dns-out-of-puppet.md"
BACKUPS = "wiki/concept/nightly-backups.md"


@pytest.fixture
def kb(tmp_path, fake_model):
    kb = KnowledgeBase.init(tmp_path / "kb")
    compile_notes(kb, {**NOTES, "hooks-chat.md": HOOKS_CHAT}, tmp_path)
    return kb


def cli(kb, *args, input=None):
    return CliRunner().invoke(
        main, ["--kb", str(kb.root), *args], input=input, catch_exceptions=False
    )


def articles_of(kb, name):
    return json.loads(cli(kb, "corpus", "show", name, "--json").stdout)["articles"]


def commits(kb):
    return git(kb, "rev-list", "--count", "HEAD").strip()


def test_a_corpus_is_a_small_versioned_file_with_its_filter_and_articles(kb):
    result = cli(kb, "corpus", "build", "decisions", "--type", "decision",
                 "--description", "Every decision we took")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "Corpus decisions: 3 article(s)" in result.stdout
    saved = (kb.root / "corpora" / "decisions.md").read_text(encoding="utf-8")
    assert "types:\n  - decision" in saved or "- decision" in saved
    for path in (RETRIES, LEASES, DNS):
        assert path in saved
    assert BACKUPS not in saved
    assert "[Worker leases](../wiki/decision/worker-leases.md)" in saved  # a person can follow it
    log = git(kb, "log", "-1", "--format=%s", "--name-only")
    assert log.startswith("corpus: build decisions (3 articles)") and "corpora/decisions.md" in log
    assert git(kb, "status", "--porcelain").strip() == ""
    listed = cli(kb, "corpus", "list")
    assert "decisions  3 article(s)" in listed.stdout and "Every decision we took" in listed.stdout
    assert "type decision" in listed.stdout
    shown = cli(kb, "corpus", "show", "decisions")
    assert shown.exit_code == 0 and f"  {LEASES}" in shown.stdout


def test_a_type_only_learned_lessons_have_points_to_them_and_to_the_sessions_articles(
    tmp_path, fake_model
):
    # compiled sessions teach pitfalls and conventions as lessons (lessons/), while their
    # articles may all be typed otherwise: --type convention finds no article, and says
    # where the conventions are and which filter takes the sessions' articles
    kb = KnowledgeBase.init(tmp_path / "kb")
    chat = [
        {"role": "user", "content": "Fix the flaky queue test. Never push to main without "
         "running pytest -x first."},
        {"role": "assistant", "content": "Done: the queue test waits for the worker now."},
    ]  # fmt: skip
    session = tmp_path / "flaky-queue.json"
    session.write_text(json.dumps(chat), encoding="utf-8")
    assert cli(kb, "compile", str(session)).exit_code == 0
    learned = json.loads(cli(kb, "learned", "list", "--json").output)
    assert [row["kind"] for row in learned] == ["convention"]
    before = commits(kb)
    result = cli(kb, "corpus", "build", "rules", "--type", "convention")
    assert result.exit_code == 2 and "nothing was saved" in result.output
    assert "1 convention(s) learned from sessions are lessons" in result.output
    assert "kb-ai learned list" in result.output and "--source-kind transcript" in result.output
    assert commits(kb) == before and not (kb.root / "corpora" / "rules.md").exists()
    built = cli(kb, "corpus", "build", "rules", "--source-kind", "transcript", "--json")
    assert built.exit_code == 0, built.output
    assert len(json.loads(built.stdout)["articles"]) == 1  # the session's article
    plain = cli(kb, "corpus", "build", "none", "--type", "decison")
    assert "learned from sessions" not in plain.output  # no lesson kind: no such pointer


def test_a_filter_that_matches_nothing_says_so_and_saves_nothing(kb):
    before = commits(kb)
    result = cli(kb, "corpus", "build", "none", "--type", "decison")
    assert result.exit_code == 2
    assert "No article matches" in result.output and "nothing was saved" in result.output
    assert "its types:" in result.output and "decision" in result.output  # what to pick instead
    later = cli(kb, "corpus", "build", "future", "--since", "2999-01-01")
    assert later.exit_code == 2 and "No article matches" in later.output
    assert not (kb.root / "corpora" / "none.md").exists()
    assert not (kb.root / "corpora" / "future.md").exists()
    assert commits(kb) == before
    bad = cli(kb, "corpus", "build", "bad", "--since", "last week")
    assert bad.exit_code == 2 and "YYYY-MM-DD" in bad.output
    kind = cli(kb, "corpus", "build", "bad", "--source-kind", "transcripts")
    assert kind.exit_code == 2 and "note, document, transcript" in kind.output
    name = cli(kb, "corpus", "build", "../escape", "--type", "decision")
    assert name.exit_code == 2 and "not a corpus name" in name.output
    assert not (kb.root / "escape.md").exists()


def test_source_kind_and_files_find_the_session_that_touched_the_hooks(kb):
    result = cli(kb, "corpus", "build", "hooks", "--source-kind", "transcript",
                 "--files", "kb_ai/hooks")  # fmt: skip
    assert result.exit_code == 0, result.output
    (hooks,) = articles_of(kb, "hooks")
    assert read_article(kb, hooks).title == "Chat about the stop hook"
    # a note is not a transcript, and no note names a file under kb_ai/hooks
    notes = cli(
        kb, "corpus", "build", "notes-hooks", "--source-kind", "note", "--files", "kb_ai/hooks"
    )
    assert notes.exit_code == 2 and "No article matches" in notes.output


def test_a_query_ranks_the_articles_and_limit_keeps_the_best(kb):
    result = cli(kb, "corpus", "build", "worker", "--query", "worker lease", "--limit", "1")
    assert result.exit_code == 0, result.output
    assert articles_of(kb, "worker") == [LEASES]
    both = cli(kb, "corpus", "build", "worker-all", "--type", "decision", "--query", "worker")
    assert both.exit_code == 0
    assert sorted(articles_of(kb, "worker-all")) == sorted([RETRIES, LEASES])


def test_rebuild_finds_what_was_added_and_rm_removes_the_file_in_a_commit(kb, tmp_path):
    assert cli(kb, "corpus", "build", "decisions", "--type", "decision").exit_code == 0
    again = cli(kb, "corpus", "build", "decisions", "--type", "concept")
    assert again.exit_code == 2 and "corpus rebuild decisions" in again.output
    unchanged = cli(kb, "corpus", "rebuild", "decisions")
    assert unchanged.exit_code == 0 and "unchanged" in unchanged.stdout
    more = {
        "queue.md": "# Queue depth\n\nWe decided to cap the task queue at ten thousand tasks.\n"
    }
    (tmp_path / "more").mkdir()
    compile_notes(kb, more, tmp_path / "more")
    rebuilt = cli(kb, "corpus", "rebuild", "decisions")
    assert rebuilt.exit_code == 0, rebuilt.output
    assert "added    wiki/decision/queue-depth.md" in rebuilt.stdout
    assert len(articles_of(kb, "decisions")) == 4
    assert git(kb, "log", "-1", "--format=%s").startswith("corpus: rebuild decisions")
    removed = cli(kb, "corpus", "rm", "decisions")
    assert removed.exit_code == 0 and not (kb.root / "corpora" / "decisions.md").exists()
    assert git(kb, "log", "-1", "--format=%s").startswith("corpus: remove decisions")
    assert (kb.root / LEASES).is_file()  # the articles stay
    gone = cli(kb, "corpus", "rm", "decisions")
    assert gone.exit_code == 2 and "No corpus 'decisions'" in gone.output


def test_a_corpus_that_fits_is_read_whole_and_a_cross_record_question_cites_each_record(
    kb, fake_model
):
    assert cli(kb, "corpus", "build", "decisions", "--type", "decision").exit_code == 0
    asked = len(fake_model.requests)
    result = cli(kb, "ask", "--json", "--corpus", "decisions", "What recurs for the worker?")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["corpus"] == {"name": "decisions", "read_whole": True, "articles": 3}
    assert sorted(data["read"]) == sorted([RETRIES, LEASES, DNS])  # all of it, nothing else
    stages = [stage_of(r) for r in fake_model.requests[asked:]]
    assert stages == ["answer"]  # no page selection, no follow-up
    cited = {c["path"] for c in data["citations"]}
    assert cited == {RETRIES, LEASES}  # a synthesis citing each record it draws on
    assert f"[Worker retries]({RETRIES}#L" in data["answer"]
    assert f"[Worker leases]({LEASES}#L" in data["answer"]
    assert "read whole" in result.stderr


def test_questions_to_a_corpus_share_one_prompt_head(kb, fake_model):
    assert cli(kb, "corpus", "build", "decisions", "--type", "decision").exit_code == 0
    asked = len(fake_model.requests)
    lease = cli(kb, "ask", "--corpus", "decisions", "How long is a worker lease?")
    dns = cli(kb, "ask", "--corpus", "decisions", "Why did DNS move out of puppet?")
    assert lease.exit_code == 0 and dns.exit_code == 0
    # each answered from its own record, though both prompts hold the whole corpus
    assert "task lease of ten minutes" in lease.stdout and "Terraform" not in lease.stdout
    assert f"[Worker leases]({LEASES}#L" in lease.stdout
    assert "into Terraform" in dns.stdout and "lease" not in dns.stdout.split("Sources:")[0]
    assert f"[DNS out of puppet]({DNS}#L" in dns.stdout
    first, second = [r["messages"] for r in fake_model.requests[asked:]]
    assert first[0] == second[0]  # the system message, naming the corpus
    head = first[-1]["content"].rsplit("Question:", 1)[0]
    assert len(head) > 300 and second[-1]["content"].startswith(head)
    assert first[-1]["content"] != second[-1]["content"]


def test_a_corpus_too_large_to_read_whole_is_selected_inside_and_says_so(
    kb, fake_model, monkeypatch
):
    assert cli(kb, "corpus", "build", "decisions", "--type", "decision").exit_code == 0
    monkeypatch.setenv("KB_AI_CORPUS_BUDGET_TOKENS", "40")
    asked = len(fake_model.requests)
    result = cli(kb, "ask", "--json", "--corpus", "decisions", "How long does a worker lease last?")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["corpus"]["read_whole"] is False
    assert "pages were selected inside it" in result.stderr
    selects = [r for r in fake_model.requests[asked:] if stage_of(r) == "select"]
    offered = selects[0]["messages"][-1]["content"]
    assert LEASES in offered and BACKUPS not in offered and "stop hook" not in offered.lower()
    assert set(data["read"]) <= {RETRIES, LEASES, DNS}
    assert [c["path"] for c in data["citations"]] == [LEASES]
    assert (
        "lease of ten minutes" in data["answer"] and f"[Worker leases]({LEASES}#L" in data["answer"]
    )


def test_a_model_citing_outside_the_corpus_or_inventing_is_not_passed_on(kb, fake_model):
    assert cli(kb, "corpus", "build", "decisions", "--type", "decision").exit_code == 0
    fake_model.queue(
        Reply(
            f"A worker holds a task lease of ten minutes [Worker leases]({LEASES}). "
            f"Backup copies are kept for thirty days [Nightly backups]({BACKUPS}). "
            f"Each worker restarts every 45 seconds [Worker retries]({RETRIES})."
        )
    )
    data = json.loads(
        cli(
            kb, "ask", "--json", "--corpus", "decisions", "What do the worker decisions say?"
        ).stdout
    )
    assert [c["path"] for c in data["citations"]] == [LEASES]
    assert "thirty days" not in data["answer"] and "45" not in data["answer"]
    assert BACKUPS not in data["read"]


def test_an_unknown_corpus_lists_the_corpora_and_a_deleted_article_is_said(kb):
    assert cli(kb, "corpus", "build", "decisions", "--type", "decision").exit_code == 0
    unknown = cli(kb, "ask", "--corpus", "decision", "Why did DNS move?")
    assert unknown.exit_code == 2
    assert "No corpus 'decision'" in unknown.output and "corpora: decisions" in unknown.output
    both = cli(kb, "ask", "--corpus", "decisions", "--paths", DNS, "Why did DNS move?")
    assert both.exit_code == 2 and "not both" in both.output
    (kb.root / RETRIES).unlink()
    result = cli(kb, "ask", "--json", "--corpus", "decisions", "How long is a worker lease?")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert RETRIES not in data["read"] and LEASES in data["read"]
    assert "lease of ten minutes" in data["answer"] and RETRIES not in data["answer"]
    assert "no longer in the wiki: kb-ai corpus rebuild decisions" in result.stderr
    shown = cli(kb, "corpus", "show", "decisions")
    assert f"{RETRIES}  (no longer in the wiki)" in shown.stdout


def test_topic_keeps_the_articles_tagged_with_it(kb):
    tag = read_article(kb, LEASES).tags[0]
    tagged = sorted(p for p in (RETRIES, LEASES, DNS, BACKUPS) if tag in read_article(kb, p).tags)
    result = cli(kb, "corpus", "build", "tagged", "--topic", tag.upper())  # any case
    assert result.exit_code == 0, result.output
    assert sorted(articles_of(kb, "tagged")) == tagged and len(tagged) < 4
