"""`kb-ai compile` against a stand-in model server whose writer misbehaves: what the user
sees in the JSON summary, the exit status, log.md and the wiki (issue 13)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from kb_ai.cli import main
from tests.fakes.kb_responder import respond, stage_of
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from wiki import list_articles, read_article

QUEUE = "# Queue choice\n\nWe decided to run the job queue on Postgres, not Redis.\n"
DNS = "# DNS records\n\nThe DNS records moved out of the puppet module into Terraform.\n"


def misbehaving_writer(request):
    """kb_responder, except that write replies come back as HTML (the queue note) or as
    one paragraph repeated until a 3,000-character cap, cut mid-word (the DNS note)."""
    reply = respond(request)
    if stage_of(request) != "write":
        return reply
    data = json.loads(reply.content)
    users = [m["content"] for m in request["messages"] if m["role"] == "user"]
    if "Queue choice" in users[-1]:
        data["body"] = "<p>We decided to run the job queue on Postgres, not Redis.</p>"
    else:
        para = "The DNS records moved out of the puppet module into Terraform."
        data["body"] = "\n\n".join([para] * 60)[:3000]
    return Reply(json.dumps(data))


def test_compile_reports_what_the_checks_did_and_takes_in_no_defect(kb, tmp_path, monkeypatch):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "queue.md").write_text(QUEUE, encoding="utf-8")
    (notes / "dns.md").write_text(DNS, encoding="utf-8")
    with FakeOpenAIServer(misbehaving_writer) as server:
        monkeypatch.setenv("KB_AI_MODEL", "openai/fake-model")
        monkeypatch.setenv("KB_AI_API_BASE", server.base_url)
        monkeypatch.setenv("KB_AI_API_KEY", "sk-test")
        result = CliRunner().invoke(
            main, ["--kb", str(kb.root), "compile", str(notes), "--json"], catch_exceptions=False
        )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["failed"] == []
    assert any("converted to Markdown" in c for c in summary["checks"])
    # the repeated, cut paragraph was asked for again, then kept once and whole
    assert any("kept its whole sentences, each once" in c for c in summary["checks"])
    bodies = {read_article(kb, p).body for p in list_articles(kb)}
    assert any("<p>" not in b and "job queue on Postgres, not Redis." in b for b in bodies)
    para = "The DNS records moved out of the puppet module into Terraform."
    assert [b.count(para) for b in bodies if para in b] == [1]
    log = kb.log_path.read_text(encoding="utf-8")
    assert "checked " in log and "converted to Markdown" in log and "each once" in log
