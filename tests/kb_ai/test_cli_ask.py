"""`kb-ai ask` and `kb-ai chat` end to end against the fake model server over HTTP."""

import json
import subprocess
import sys
from contextlib import closing

import pytest
from click.testing import CliRunner

from kb_ai.cli import main
from tests.conftest import compile_notes
from tests.fakes.kb_responder import stage_of
from tests.fakes.openai_server import Reply
from wiki import KnowledgeBase

NOTES = {
    "dns.md": "# DNS out of puppet\n\nWe decided to move DNS records out of the puppet module into Terraform. "
    "Puppet runs took twenty minutes for every record change.\n",
    "backups.md": "# Nightly backups\n\nBackups of the main database run nightly at 02:00. "
    "Backup copies are kept for thirty days in a separate account.\n",
}


@pytest.fixture
def server(fake_model):
    return fake_model


@pytest.fixture
def kb(tmp_path, server):
    kb = KnowledgeBase.init(tmp_path / "kb")
    compile_notes(kb, NOTES, tmp_path)
    return kb


def cli(kb, *args, input=None):
    return CliRunner().invoke(
        main, ["--kb", str(kb.root), *args], input=input, catch_exceptions=False
    )


def test_ask_json_has_answer_citations_read_usage_and_the_checks(kb, server):
    result = cli(kb, "ask", "--json", "How long are nightly backups kept?")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data) == {
        "answer", "citations", "read", "usage", "covered", "see_also", "findings", "claims",
        "faithfulness",
    }  # fmt: skip
    assert data["covered"] is True and data["findings"] == [] and data["see_also"] == []
    assert data["citations"] == [
        {"title": "Nightly backups", "path": "wiki/concept/nightly-backups.md"}
    ]
    assert "wiki/concept/nightly-backups.md" in data["read"]
    assert data["usage"]["calls"] == 2 and data["usage"]["prompt_tokens"] > 0
    # the citation names the lines of the page that hold the claim, and they support it
    (claim,) = data["claims"]
    start, end = claim["span"]["start"], claim["span"]["end"]
    place = f"#L{start}" if start == end else f"#L{start}-L{end}"
    assert f"[Nightly backups](wiki/concept/nightly-backups.md{place})" in data["answer"]
    lines = (kb.root / "wiki/concept/nightly-backups.md").read_text().split("\n")
    assert claim["span"]["text"] == "\n".join(lines[start - 1 : end]).strip()
    assert claim["supported"] is True and data["faithfulness"] == 1.0


def test_ask_streams_the_answer_then_lists_sources(kb, server):
    result = cli(kb, "ask", "How long are nightly backups kept?")
    assert result.exit_code == 0
    body, _, tail = result.output.partition("\nSources:\n")
    assert "[Nightly backups](wiki/concept/nightly-backups.md#L" in body
    assert "  [Nightly backups](wiki/concept/nightly-backups.md)" in tail
    assert "Read: " in tail
    # the citation-faithfulness check of the answer, in words
    assert "Cited claims: 1 of 1 supported by the lines they cite." in tail


def test_an_uncovered_question_says_so_and_cites_nothing(kb, server):
    asked = len(server.requests)
    data = json.loads(cli(kb, "ask", "--json", "What colour is the office carpet?").output)
    assert data["citations"] == [] and data["covered"] is False
    assert "does not cover" in data["answer"]
    assert len(server.requests) == asked  # declined without a model call
    assert data["usage"]["calls"] == 0


def test_an_outside_knowledge_answer_is_not_passed_on(kb, server, monkeypatch):
    monkeypatch.setenv("KB_AI_MAX_HOPS", "0")  # the replies are scripted call by call
    monkeypatch.setenv("KB_AI_COVERAGE_THRESHOLD", "0")  # the evidence gate off: the checks
    # the question shares "main" with the backups page, so the model is asked; it picks
    # that page and answers from what it knows
    server.queue(
        Reply('{"paths": ["wiki/concept/nightly-backups.md"]}'),
        Reply(
            "The main city of Mongolia is Ulaanbaatar, home to 1.6 million people "
            "[Nightly backups](wiki/concept/nightly-backups.md)."
        ),
    )
    data = json.loads(cli(kb, "ask", "--json", "What is the main city of Mongolia?").output)
    assert "Ulaanbaatar" not in data["answer"] and "1.6" not in data["answer"]
    assert data["covered"] is False and data["citations"] == []
    assert {f["check"] for f in data["findings"]} == {"grounding"}


def test_an_invented_number_is_left_out_and_the_terminal_says_so(kb, server, monkeypatch):
    monkeypatch.setenv("KB_AI_MAX_HOPS", "0")  # the replies are scripted call by call
    server.queue(
        Reply('{"paths": ["wiki/concept/nightly-backups.md"]}'),
        Reply(
            "Backups of the main database run nightly at 02:00 "
            "[Nightly backups](wiki/concept/nightly-backups.md). "
            "Copies are kept for 90 days [Nightly backups](wiki/concept/nightly-backups.md)."
        ),
    )
    result = cli(kb, "ask", "How long are backup copies kept?")
    assert result.exit_code == 0, result.output
    body, _, tail = result.output.partition("\nSources:\n")
    assert "02:00" in body and "90" not in result.output
    assert "left out" in body and "Checks: 1 grounding" in tail


def test_ask_with_paths_and_bad_paths(kb, server):
    data = json.loads(
        cli(
            kb,
            "ask",
            "--json",
            "--paths",
            "wiki/concept/nightly-backups.md",
            "When do backups run nightly?",
        ).output
    )
    assert data["read"] == ["wiki/concept/nightly-backups.md"]
    selects = [r for r in server.requests if stage_of(r) == "select"]
    assert selects == []  # named pages skip selection
    bad = cli(kb, "ask", "--paths", "../../etc/passwd", "x")
    assert bad.exit_code == 2 and "outside the wiki" in bad.output
    missing = cli(kb, "ask", "--paths", "wiki/concept/nope.md", "x")
    assert missing.exit_code == 2 and "No article" in missing.output
    empty = cli(kb, "ask", "  ")
    assert empty.exit_code == 2 and "empty" in empty.output


def test_a_selection_failure_is_reported_not_answered_around(kb, server):
    refused = Reply(status=400, body='{"error": {"message": "bad request"}}')
    server.queue(refused, refused)  # also refused once the schema moves into the prompt
    result = cli(kb, "ask", "--json", "Why did DNS move out of puppet?")
    assert result.exit_code == 1
    assert "Page selection failed" in result.output
    assert not any(stage_of(r) == "answer" for r in server.requests[-1:])


def test_chat_rewrites_follow_ups_and_keeps_the_session(kb, server):
    result = cli(
        kb,
        "chat",
        input="When do backups of the main database run?\nHow long are the copies kept?\n",
    )
    assert result.exit_code == 0, result.output
    rewrites = [r for r in server.requests if stage_of(r) == "rewrite"]
    assert len(rewrites) == 1  # only the follow-up needed rewriting
    assert "When do backups of the main database run?" in rewrites[0]["messages"][-1]["content"]
    session_id = result.output.rsplit("kb-ai chat --session ", 1)[1].strip()
    again = cli(kb, "chat", "--session", session_id, input="\n")
    assert "2 message(s)" not in again.output and "4 message(s)" in again.output
    # each answer is kept with the "Cited claims" line printed under it (the chat page
    # shows it when the session is opened there)
    from retrieval import ChatStore
    from wiki import open_state

    printed = [line for line in result.output.splitlines() if line.startswith("Cited claims:")]
    with closing(open_state(kb)) as conn:
        messages = ChatStore(conn).get(session_id)["messages"]
    kept = [m["checked"] for m in messages if m["role"] == "assistant"]
    assert printed and [k for k in kept if k] == printed, (kept, printed)


def test_a_whole_ask_process_does_not_import_litellm(kb, server):
    code = (
        "import sys, runpy; sys.argv = ['kb-ai', '--kb', sys.argv[1], 'ask', '--json', 'When do nightly backups run?'];"
        "from kb_ai.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "assert 'litellm' not in sys.modules, 'litellm was imported'\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(kb.root)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[0])["citations"]


def test_a_question_over_the_length_limit_is_refused_before_any_model_call(kb, server):
    asked = len(server.requests)
    long = "Why did DNS move out of puppet? " + "And why? " * 450
    for command in (["ask"], ["ask", "--json"]):
        result = CliRunner().invoke(main, ["--kb", str(kb.root), *command, long])
        assert result.exit_code == 2, result.output
        assert "The question is over 4,000 characters (shorten it)" in result.output
    # in a chat, the long question is refused and the chat goes on to the next one
    chat = cli(kb, "chat", input=f"{long}\nWhen do backups run nightly?\nexit\n")
    assert "over 4,000 characters" in chat.output and "02:00" in chat.output, chat.output
    assert len(server.requests) > asked  # only the second question reached the model
    # and the chat saved is titled by the question that was asked, not the refused one
    from retrieval import ChatStore
    from wiki import open_state

    with closing(open_state(kb)) as conn:
        titles = [s["title"] for s in ChatStore(conn).list()]
    assert titles == ["When do backups run nightly?"], titles


def test_a_reopened_chat_prints_its_last_turns_before_the_prompt(kb, server):
    """`kb-ai chat --session ID` shows the earlier exchange before asking: the last few
    questions, each with its answer, sources and "Cited claims" line, or that its answer
    failed (the terminal chat keeps a failure too)."""
    from tests.fakes.faulty_server import FaultyModel

    first = cli(
        kb,
        "chat",
        input="When do backups of the main database run?\nHow long are backup copies kept?\n"
        "Why did we move DNS records out of the puppet module?\n",
    )
    assert first.exit_code == 0, first.output
    session_id = first.output.rsplit("kb-ai chat --session ", 1)[1].strip()
    respond = server.responder
    server.responder = FaultyModel("5xx", stages={"answer"})  # the model fails the next
    failing = cli(kb, "chat", "--session", session_id, input="And who decided that?\n")
    server.responder = respond
    assert failing.exit_code == 0, failing.output
    said = [
        line.split("Error: ", 1)[1] for line in failing.output.splitlines() if "Error: " in line
    ]
    assert len(said) == 1, failing.output
    again = cli(kb, "chat", "--session", session_id, input="\n")
    assert again.exit_code == 0, again.output
    out = again.output
    assert "7 message(s)" in out  # 4 questions, 3 answers: the failed one is no answer
    assert "(the last 3 of 4 questions)" in out
    assert "you> When do backups" not in out  # the oldest is left out
    shown = [
        out.index("you> How long are backup copies kept?"),
        out.index("nightly at 02:00"),  # its answer (the stand-in model's)
        out.index("Sources: Nightly backups"),
        out.index("Cited claims:"),
        out.index("you> Why did we move DNS records out of the puppet module?"),
        out.index("The wiki does not cover this question"),
        out.index("you> And who decided that?"),
        out.index("No answer: " + said[0]),
    ]
    assert shown == sorted(shown), out
    assert out.rindex("you> ") > shown[-1]  # then the prompt, for the next question
    # the earlier answers' "Cited claims" lines, as printed when they were given
    printed = [line for line in first.output.splitlines() if line.startswith("Cited claims:")]
    assert [line for line in out.splitlines() if line.startswith("Cited claims:")] == printed[1:]
