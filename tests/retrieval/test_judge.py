"""The coverage judge (issue 28): past the evidence check, the model is asked whether one
of the best sentences read answers the question; when none does, the answer says the
wiki does not cover it, names nearby pages and claims nothing. Through `kb-ai ask --json`
on the four example notes, with a stand-in model over loopback HTTP (OpenAI wire format)
whose judge reply each test chooses; the other stages play as tests/fakes/kb_responder."""

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from kb_ai.cli import main
from kb_ai.errors import ConfigError
from kb_ai.settings import load_settings
from retrieval.extractive import Sentence
from retrieval.judge import read_verdict
from tests.fakes.kb_responder import schema_of
from tests.fakes.openai_server import Reply
from tests.retrieval.test_coverage import eager

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "notes"
QUESTION = "Who approves a production deploy?"
FACT = "release-approvers"


def is_judge(request: dict) -> bool:
    return "sentence" in schema_of(request).get("properties", {})


def shown(request: dict) -> list[tuple[str, str]]:
    """The numbered sentences a judge request shows: (number, text)."""
    user = request["messages"][-1]["content"]
    return re.findall(r'^(\d+)\. \(from ".*?"\) (.+)$', user, re.M)


def judging(verdict):
    """A model whose judge reply is ``verdict(request)``; every other stage as an eager
    model plays it (tests/retrieval/test_coverage.py: it always answers)."""

    def responder(request: dict) -> Reply:
        if is_judge(request):
            got = verdict(request)
            return got if isinstance(got, Reply) else Reply(json.dumps(got))
        return eager(request)

    return responder


def names_the_fact(request: dict) -> dict:
    """The sentence shown that holds the fact, with the fact copied from it."""
    n = next((n for n, text in shown(request) if FACT in text), "none")
    return {"answer": FACT if n != "none" else "none", "sentence": n}


@pytest.fixture
def example_kb(tmp_path, fake_model):
    kb = tmp_path / "kb"
    runner = CliRunner()
    assert runner.invoke(main, ["--kb", str(kb), "init"]).exit_code == 0
    done = runner.invoke(main, ["--kb", str(kb), "compile", str(EXAMPLES)])
    assert done.exit_code == 0, done.output
    fake_model.compiled = len(fake_model.requests)  # what the compile asked, left out below
    return kb


def ask_json(kb: Path, question: str, **env: str) -> dict:
    env = {"KB_AI_COVERAGE_JUDGE": "on", **env}
    result = CliRunner().invoke(main, ["--kb", str(kb), "ask", "--json", question], env=env)
    assert result.exit_code == 0, result.output
    return json.loads([line for line in result.output.splitlines() if line.startswith("{")][-1])


def asked(server) -> list[dict]:
    """The requests since the example notes were compiled."""
    return server.requests[server.compiled :]


def stages(server) -> list[str]:
    """What the model was asked, in order: judge, pick (sentences), answer (free text)..."""
    out = []
    for request in asked(server):
        props = schema_of(request).get("properties", {})
        out.append(
            "judge" if "sentence" in props else
            "pick" if "sentences" in props else
            "select" if "paths" in props else
            "other" if props else "answer"
        )  # fmt: skip
    return out


@pytest.mark.parametrize("small", ["0", "1"], ids=["writing", "extractive"])
def test_a_question_no_sentence_answers_is_declined_when_the_judge_says_so(
    example_kb, fake_model, small
):
    """The evidence check lets the question through; the judge finds no sentence that
    answers: declined, no answer call, nearby pages named, nothing cited."""
    fake_model.responder = judging(lambda r: {"answer": "none", "sentence": "none"})
    got = ask_json(example_kb, QUESTION, KB_AI_SMALL_MODEL=small)
    assert got["covered"] is False, got["answer"]
    assert got["answer"].startswith("The wiki does not cover this question.")
    assert FACT not in got["answer"]
    assert got["citations"] == [] and got["claims"] == []
    assert 1 <= len(got["see_also"]) <= 3
    assert any("the model judged" in f["detail"] for f in got["findings"]), got["findings"]
    calls = stages(fake_model)
    assert calls.count("judge") == 1
    assert "answer" not in calls and "pick" not in calls


@pytest.mark.parametrize("small", ["0", "1"], ids=["writing", "extractive"])
def test_a_question_a_sentence_answers_is_answered_when_the_judge_names_it(
    example_kb, fake_model, small
):
    fake_model.responder = judging(names_the_fact)
    got = ask_json(example_kb, QUESTION, KB_AI_SMALL_MODEL=small)
    assert got["covered"] is True, (got["answer"], got["findings"])
    assert FACT in got["answer"] and got["citations"]
    calls = stages(fake_model)
    assert calls.count("judge") == 1
    assert calls.index("judge") < calls.index("pick" if small == "1" else "answer")
    # the judge saw the sentence the answer quotes
    judge_request = asked(fake_model)[calls.index("judge")]
    assert any(FACT in text for _, text in shown(judge_request))


def test_an_answer_the_sentences_do_not_hold_is_no_verdict_of_coverage(example_kb, fake_model):
    """A judge that names a sentence but gives an answer written nowhere in what it was
    shown (a small model answering from what it knows) does not make the question covered."""
    fake_model.responder = judging(lambda r: {"answer": "Maria Lopez", "sentence": "1"})
    got = ask_json(example_kb, QUESTION, KB_AI_SMALL_MODEL="1")
    assert got["covered"] is False
    assert any("written in none of them" in f["detail"] for f in got["findings"])


@pytest.mark.parametrize(
    "reply",
    [
        Reply("I think sentence two, probably."),
        Reply('{"answer": "release-approvers", "sentence": "9"}'),
        Reply(status=500),
    ],
    ids=["not-json", "unknown-sentence", "server-error"],
)
def test_a_judge_reply_that_decides_nothing_leaves_the_evidence_check_decision(
    example_kb, fake_model, reply
):
    """Garbage or an error from the judge does not fail the answer: the evidence check's
    decision (covered) stands, and a finding says the judge gave no usable verdict."""
    fake_model.responder = judging(lambda r: reply)
    got = ask_json(example_kb, QUESTION, KB_AI_SMALL_MODEL="1", KB_AI_MAX_RETRIES="0")
    assert got["covered"] is True, (got["answer"], got["findings"])
    assert FACT in got["answer"]
    assert any("no usable verdict" in f["detail"] for f in got["findings"]), got["findings"]


def test_a_judge_that_times_out_leaves_the_evidence_check_decision(example_kb, fake_model):
    fake_model.responder = judging(lambda r: Reply(json.dumps(names_the_fact(r)), delay=2.0))
    got = ask_json(
        example_kb, QUESTION, KB_AI_SMALL_MODEL="1", KB_AI_TIMEOUT_JUDGE="0.3",
        KB_AI_MAX_RETRIES="0",
    )  # fmt: skip
    assert got["covered"] is True, (got["answer"], got["findings"])
    assert FACT in got["answer"]
    judged = [f["detail"] for f in got["findings"] if "no usable verdict" in f["detail"]]
    assert judged and "Timeout" in judged[0], got["findings"]


def test_with_the_judge_off_the_model_is_not_asked_to_judge(example_kb, fake_model):
    fake_model.responder = judging(lambda r: {"answer": "none", "sentence": "none"})
    got = ask_json(example_kb, QUESTION, KB_AI_SMALL_MODEL="1", KB_AI_COVERAGE_JUDGE="off")
    assert got["covered"] is True and FACT in got["answer"]
    assert "judge" not in stages(fake_model)


def test_no_model_call_when_the_question_shares_no_word_with_the_wiki(example_kb, fake_model):
    fake_model.responder = judging(lambda r: {"answer": "none", "sentence": "none"})
    got = ask_json(example_kb, "Quelle heure est-il à Oulan-Bator?")
    assert got["covered"] is False
    assert asked(fake_model) == []


def test_an_uncovered_question_the_evidence_check_declines_is_not_judged(example_kb, fake_model):
    fake_model.responder = judging(names_the_fact)
    got = ask_json(example_kb, "Which monitoring tool alerts on database replication lag?")
    assert got["covered"] is False
    assert "judge" not in stages(fake_model)


def sentences(*texts: str) -> list[Sentence]:
    return [Sentence(f"s{i}", t, "wiki/a.md", "Notes") for i, t in enumerate(texts, 1)]


def test_an_answer_that_only_repeats_the_question_does_not_answer_it():
    """Asked "Who played Jerry Lee Lewis in Walk the Line?", answered "Jerry Lee Lewis" from a
    page on his song: the judge named a sentence, but its answer is the question's own."""
    shown = sentences("Great Balls of Fire is a song by Jerry Lee Lewis.")
    q = "Who played Jerry Lee Lewis in Walk the Line?"
    verdict = read_verdict({"answer": "Jerry Lee Lewis", "sentence": "1"}, q, shown)
    assert verdict.answers is False and "repeats" in verdict.detail
    played = sentences("Waylon Payne played Jerry Lee Lewis in Walk the Line.")
    assert read_verdict({"answer": "Waylon Payne", "sentence": "1"}, q, played).answers is True
    # a choice between what the question names is answered by one of them
    born = sentences("Tim Burton was born in 1958; Danny Elfman in 1953.")
    choice = "Who was born first, Tim Burton or Danny Elfman?"
    assert read_verdict({"answer": "Danny Elfman", "sentence": "1"}, choice, born).answers is True


def test_the_setting_takes_auto_on_or_off_and_refuses_anything_else(tmp_path):
    env = {"KB_AI_COVERAGE_JUDGE": "maybe"}
    with pytest.raises(ConfigError, match="coverage_judge must be one of auto, on, off"):
        load_settings(tmp_path, {"model": "openai/x"}, environ=env)
    hosted = load_settings(tmp_path, {"model": "openai/x"}, environ={})
    assert hosted.coverage_judge == "auto" and hosted.judges_coverage
    for local in ("local/default", "local//models/qwen-1.5b.gguf"):  # measured: see README
        assert not load_settings(tmp_path, {"model": local}, environ={}).judges_coverage
    on = load_settings(tmp_path, {"model": "local/default"}, environ={"KB_AI_COVERAGE_JUDGE": "on"})
    assert on.judges_coverage
