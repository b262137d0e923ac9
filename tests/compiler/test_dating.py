"""Time and conflicts: the newest source is current, older ones stay in a dated history
line, and same-date disagreements are shown as a conflict and listed by lint."""

from __future__ import annotations

import json

from click.testing import CliRunner

from compiler.dating import source_date
from kb_ai.cli import main
from wiki import read_article

CACHE = "wiki/decision/session-cache-decision.md"


def compile_folder(kb, folder):
    result = CliRunner().invoke(main, ["--kb", str(kb.root), "compile", str(folder)])
    assert result.exit_code == 0, result.output


def test_a_source_is_dated_by_its_frontmatter_name_or_text_else_when_added():
    added = "2026-11-30T10:00:00+00:00"
    assert source_date("---\ndate: 2026-01-15\n---\n# X\n", "/n/x.md", added).date == "2026-01-15"
    assert source_date("# X\n", "/n/2026-03-02-standup.md", added).date == "2026-03-02"
    assert source_date("# X\n\nMeeting of 2026-02-10.\n", "/n/x.md", added).date == "2026-02-10"
    undated = source_date("# X\n\nNo date here.\n", "/n/x.md", added)
    assert (undated.date, undated.stated) == ("2026-11-30", False)


def test_the_march_decision_is_current_and_january_stays_in_a_dated_history_line(
    kb, fake_model, tmp_path
):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "2026-01-12-cache.md").write_text(
        "# Session cache decision\n\nWe decided on Redis for the session cache, TTL 30 minutes.\n"
    )
    compile_folder(kb, notes)
    (notes / "2026-03-09-cache.md").write_text(
        "# Session cache decision\n\nWe decided on Memcached for the session cache, TTL 15 minutes.\n"
    )
    compile_folder(kb, notes)
    article = read_article(kb, CACHE)
    current, _, history = article.body.partition("## History")
    assert "Memcached" in current and "15 minutes" in current and "Redis" not in current
    assert "Until 2026-03-09: We decided on Redis for the session cache, TTL 30 minutes." in history
    assert len(article.sources) == 2 and all(s in article.body for s in article.sources)
    assert "Memcached" in article.summary
    # the writer was told each material's date
    prompt = fake_model.requests[-1]["messages"][-1]["content"]
    assert "(dated 2026-01-12)" in prompt and "(dated 2026-03-09)" in prompt


def test_a_same_date_disagreement_is_a_conflict_that_lint_lists(kb, fake_model, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "2026-03-01-a.md").write_text("# Session cache decision\n\nWe decided on Redis.\n")
    compile_folder(kb, notes)
    (notes / "2026-03-01-b.md").write_text("# Session cache decision\n\nWe decided on Memcached.\n")
    compile_folder(kb, notes)
    body = read_article(kb, CACHE).body
    assert "Conflict (2026-03-01):" in body and "Redis" in body and "Memcached" in body
    result = CliRunner().invoke(main, ["--kb", str(kb.root), "lint", "--json"])
    conflicts = [f for f in json.loads(result.output)["findings"] if f["check"] == "conflict"]
    assert [f["path"] for f in conflicts] == [CACHE] and "Memcached" in conflicts[0]["message"]


def test_a_later_note_about_an_earlier_state_is_weighed_by_when_its_facts_held(
    kb, fake_model, tmp_path
):
    """A retrospective written in June about January's choice does not make January's
    choice current over March's: the extraction dates each fact by what the source says
    of it, and the writer weighs facts by that date before the note's own."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "2026-03-09-cache.md").write_text(
        "# Session cache decision\n\nWe decided on Memcached for the session cache, TTL 15 minutes.\n"
    )
    compile_folder(kb, notes)
    (notes / "2026-06-30-retro.md").write_text(
        "# Session cache decision\n\nLooking back at the session cache decision of the winter."
        "\nOn 2026-01-12 we decided on Redis for the session cache, TTL 30 minutes.\n"
    )
    compile_folder(kb, notes)
    # the extraction records what the fact is about and when it held
    stored = (kb.extraction_dir / "session-cache-decision-2.md").read_text(encoding="utf-8")
    data = json.loads(stored.split("```json", 1)[1].split("```", 1)[0])
    assert {"fact": data["facts"][0]["fact"], "held": data["facts"][0]["held"]} == {
        "fact": "On 2026-01-12 we decided on Redis for the session cache, TTL 30 minutes.",
        "held": "2026-01-12",
    }
    assert data["facts"][0]["about"] == "Session cache decision"
    prompt = fake_model.requests[-1]["messages"][-1]["content"]
    assert "(dated 2026-06-30)" in prompt and "TTL 30 minutes. (held 2026-01-12)" in prompt
    article = read_article(kb, CACHE)
    current, _, history = article.body.partition("## History")
    assert "Memcached" in current and "Redis" not in current
    assert "Until 2026-03-09:" in history and "raw/session-cache-decision-2.md" in history


def test_a_date_or_subject_the_source_does_not_state_is_not_kept():
    import asyncio

    from compiler.extract import extract_source
    from compiler.run import PROMPTS
    from compiler.sources import source_from_text
    from tests.fakes.fake_llm import FakeLLM

    source = source_from_text(
        "/n/cache.md",
        "Cache",
        "# Cache\n\nIn March 2026 the session cache moved to Memcached.\n",
        chunk_chars=10_000,
        max_bytes=1_000_000,
    )
    llm = FakeLLM()
    llm.enqueue(
        {
            "title": "Cache",
            "summary": "The session cache moved to Memcached.",
            "topics": [],
            "concepts": [],
            "entities": [],
            "decisions": [],
            "facts": [
                {"fact": "The session cache moved to Memcached.", "about": "session cache",
                 "held": "2026-03"},
                {"fact": "Memcached runs in March 2026.", "about": "the Frankfurt cluster",
                 "held": "2025-11-02"},
                {"fact": "It moved in March 2026.", "about": "session cache", "held": "March"},
            ],
            "enumerations": [],
            "action_items": [],
        }
    )  # fmt: skip
    ex = asyncio.run(extract_source(llm, PROMPTS, source))
    facts = ex.as_data()["facts"]
    assert facts[0] == {
        "fact": "The session cache moved to Memcached.",
        "about": "session cache",
        "held": "2026-03",
    }
    assert facts[1] == "Memcached runs in March 2026."  # an invented date and place: gone
    assert facts[2] == {"fact": "It moved in March 2026.", "about": "session cache", "held": ""}
    assert any("not state them" in note for note in ex.notes)
    assert "Facts about session cache:" in ex.to_markdown()
