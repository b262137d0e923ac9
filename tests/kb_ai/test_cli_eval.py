"""`kb-ai eval FILE` end to end: the golden questions asked through the service with the
stand-in model over HTTP, scored, kept in .kb-ai/eval/, compared with the last run."""

import json

import pytest
from click.testing import CliRunner

from kb_ai.cli import main
from tests.conftest import compile_notes
from tests.kb_ai.test_cli_ask import NOTES
from wiki import KnowledgeBase

# The stand-in answers with the first sentence of the page that shares most words with
# the question: the first two are right, the third states another fact of the right page.
GOLDEN = """\
questions:
  - question: Where did we move the DNS records of the puppet module?
    expect: [Terraform]
  - question: When do backups of the main database run nightly?
    expect: ["02:00"]
  - question: How long are nightly backup copies of the main database kept?
    expect: [thirty days]
  - question: What colour is the office carpet?
    expect: not covered
"""


@pytest.fixture
def kb(tmp_path, fake_model):
    kb = KnowledgeBase.init(tmp_path / "kb")
    compile_notes(kb, NOTES, tmp_path)
    return kb


def cli(kb, *args):
    return CliRunner().invoke(main, ["--kb", str(kb.root), *args], catch_exceptions=False)


def golden(tmp_path, text=GOLDEN, name="golden.yaml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_eval_scores_each_answer_and_keeps_json_and_markdown_reports(kb, tmp_path, fake_model):
    result = cli(kb, "eval", "--json", golden(tmp_path))
    assert result.exit_code == 0, result.output
    run = json.loads(result.output)
    outcomes = {q["line"]: q["outcome"] for q in run["questions"]}
    assert outcomes == {2: "right", 4: "right", 6: "wrong", 8: "right_abstention"}
    assert run["totals"] == {
        "questions": 4, "right": 2, "right_abstention": 1, "wrong": 1,
        "missed": 0, "unsupported": 0, "error": 0,
    }  # fmt: skip
    assert run["score"] == 0.75 and run["previous"] is None and run["regression"] is False
    wrong = next(q for q in run["questions"] if q["outcome"] == "wrong")
    assert "'thirty days'" in wrong["detail"] and wrong["line"] == 6
    # the question no page shares a word with was declined without a model call
    carpet = next(q for q in run["questions"] if "carpet" in q["question"])
    assert carpet["calls"] == 0 and carpet["covered"] is False
    # every cited claim of the answers is supported by the lines it cites
    assert run["faithfulness"] == 1.0
    saved = [kb.root / p for p in run["saved"]]
    assert [p.suffix for p in saved] == [".json", ".md"]
    assert all(p.parent == kb.root / ".kb-ai" / "eval" / "golden" for p in saved)
    assert json.loads(saved[0].read_text())["score"] == 0.75
    md = saved[1].read_text()
    assert "Score 75% of 4 question(s)" in md
    assert "### Line 6: How long are nightly backup copies" in md and "thirty days" in md


def test_a_second_run_is_compared_and_a_regression_exits_1(kb, tmp_path, fake_model):
    path = golden(tmp_path)
    first = cli(kb, "eval", path)
    assert first.exit_code == 0, first.output
    assert "No earlier run of this set" in first.output
    same = cli(kb, "eval", path)
    assert same.exit_code == 0 and "75% -> 75% on 4 common question(s) (no change)" in same.output
    # a hand edit (or a bad compile) loses the Terraform fact: that answer goes wrong
    article = kb.root / "wiki" / "decision" / "dns-out-of-puppet.md"
    if not article.exists():
        article = next(kb.root.glob("wiki/*/dns-out-of-puppet.md"))
    text = article.read_text(encoding="utf-8")
    article.write_text(text.replace("into Terraform", "into another tool"), encoding="utf-8")
    worse = cli(kb, "eval", path)
    assert worse.exit_code == 1, worse.output
    assert "75% -> 50%" in worse.output and "REGRESSION" in worse.output
    # within a margin the same fall passes, and is still reported
    tolerated = cli(kb, "eval", "--margin", "0.3", "--against", str(first_report(kb)), path)
    assert tolerated.exit_code == 0 and "75% -> 50%" in tolerated.output


def first_report(kb):
    return sorted((kb.root / ".kb-ai" / "eval" / "golden").glob("*.json"))[0]


def test_sample_asks_that_many_and_compares_on_the_common_questions(kb, tmp_path, fake_model):
    path = golden(tmp_path)
    assert cli(kb, "eval", path).exit_code == 0
    result = cli(kb, "eval", "--json", "--sample", "2", "--seed", "3", path)
    assert result.exit_code == 0, result.output
    run = json.loads(result.output)
    assert len(run["questions"]) == 2 and run["sample"] == 2
    assert run["previous"]["common"] == 2
    again = json.loads(cli(kb, "eval", "--json", "--sample", "2", "--seed", "3", path).output)
    assert [q["question"] for q in again["questions"]] == [q["question"] for q in run["questions"]]


@pytest.mark.parametrize(
    ("text", "name", "said"),
    [
        ("questions:\n  - question: Why?\n    expected: [x]\n", "g.yaml", "line 3: unknown key 'expected'"),
        ("questions:\n  - question: Why?\n", "g.yaml", "line 2: this entry has no `expect`"),
        ("questions:\n  - question: Why?\n    expect: {a: 1}\n", "g.yaml", "line 3: `expect` must be a list"),
        ("questions:\n  - question: Why?\n    expect: []\n", "g.yaml", "line 3: `expect` lists no fact"),
        ("- Why did DNS move?\n", "g.yaml", "line 1: expected a question (a mapping)"),
        ("questions: [\n", "g.yaml", "not valid YAML"),
        ('{"questions": [\n  {"question": "Why?", "expect": 3}\n', "g.json", "line 3: not valid JSON"),
        ('{"questions": [\n\t{"question": "Why?", "expect": [1, [2]]}\n]}', "g.json", "line 2: a fact must be text"),
        ("", "g.yaml", "is empty"),
        ("questions:\n  - question: Why?\n    expect: [x]\n  - question: Why?\n    expect: [y]\n", "g.yaml",
         "line 4: the same question as line 2"),
        ("questions:\n  - question: " + "why " * 1200 + "\n    expect: [x]\n", "g.yaml",
         "line 2: The question is over 4,000 characters"),
    ],
)  # fmt: skip
def test_a_wrong_shaped_file_is_refused_with_its_line_before_any_model_call(
    kb, tmp_path, fake_model, text, name, said
):
    calls = len(fake_model.requests)
    result = cli(kb, "eval", golden(tmp_path, text, name))
    assert result.exit_code == 2, result.output
    assert said in result.output
    assert len(fake_model.requests) == calls
    assert not (kb.root / ".kb-ai" / "eval").exists()


def test_binary_missing_and_not_utf8_files_are_refused(kb, tmp_path):
    binary = tmp_path / "g.yaml"
    binary.write_bytes(b"questions:\n\x00\x01\x02")
    assert "line 2: a binary file" in cli(kb, "eval", str(binary)).output
    latin = tmp_path / "l.yaml"
    latin.write_bytes(b"questions:\n  - question: caf\xe9?\n    expect: [x]\n")
    result = cli(kb, "eval", str(latin))
    assert result.exit_code == 2 and "line 2: not UTF-8 text" in result.output
    missing = cli(kb, "eval", str(tmp_path / "nope.yaml"))
    assert missing.exit_code == 2 and "No file" in missing.output


def test_a_model_that_fails_every_question_is_an_error_not_a_score(
    kb, tmp_path, fake_model, monkeypatch
):
    monkeypatch.setenv("KB_AI_API_BASE", "http://127.0.0.1:9/v1")  # nothing listens there
    monkeypatch.setenv("KB_AI_MAX_RETRIES", "0")
    text = "questions:\n  - question: Where did we move the DNS records?\n    expect: [Terraform]\n"
    result = cli(kb, "eval", "--json", golden(tmp_path, text))
    assert result.exit_code == 1
    run = json.loads(result.output.splitlines()[0])
    assert run["questions"][0]["outcome"] == "error" and run["score"] == 0.0
    assert "no question was answered" in result.output


def test_the_example_set_runs_over_the_example_notes_and_reads_alike_as_json(tmp_path, fake_model):
    """examples/notes-golden.yaml is what the README tells a team to start from: every
    question of it is asked over the compiled example notes, and the same set written
    as JSON is read the same (one outcome per question, the same ones)."""
    from pathlib import Path

    import yaml

    repo = Path(__file__).resolve().parents[2]
    kb = KnowledgeBase.init(tmp_path / "kb")
    notes = {p.name: p.read_text(encoding="utf-8") for p in (repo / "examples" / "notes").iterdir()}
    compile_notes(kb, notes, tmp_path)
    example = repo / "examples" / "notes-golden.yaml"
    ran = cli(kb, "eval", "--json", str(example))
    assert ran.exit_code == 0, ran.output
    run = json.loads(ran.output)
    entries = yaml.safe_load(example.read_text(encoding="utf-8"))["questions"]
    assert [q["question"] for q in run["questions"]] == [e["question"] for e in entries]
    assert not [q for q in run["questions"] if q["outcome"] == "error"], run["questions"]
    assert run["totals"]["right_abstention"] >= 1  # the carpet is in no note
    as_json = tmp_path / "notes-golden.json"
    as_json.write_text(json.dumps({"questions": entries}, indent=2), encoding="utf-8")
    again = json.loads(cli(kb, "eval", "--json", str(as_json)).output)
    assert [q["outcome"] for q in again["questions"]] == [q["outcome"] for q in run["questions"]]
