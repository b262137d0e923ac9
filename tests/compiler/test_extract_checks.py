"""The extract checks: a stand-in extractor that loses and changes what a source says
the way a small model did (issue 13), and what the extraction and the wiki keep."""

from __future__ import annotations

import asyncio
import re

from compiler import Compiler
from tests.compiler.conftest import responder_handler
from tests.fakes.fake_llm import FakeLLM
from wiki import read_article, read_extraction

RAILWAY = """# The coastal railway

The coastal railway opened on 12 May 1998. It is 364.6 km long.
The depot needs no persistence layer for its timetables.

Stations, north to south:
- Alnmouth
- Bamburgh
- Craster
- Dunstan
- Embleton
- Felton
- Glanton
- Howick
"""

FAITHLESS = {
    "title": "The coastal railway",
    "summary": "The coastal railway is 1,000 km long. The depot needs a persistence layer.",
    "topics": ["railway"],
    "concepts": [],
    "entities": [],
    "decisions": [],
    "facts": ["The coastal railway opened.", *["It is 364.6 km long."] * 3, "it is 364.6 KM long"],
    "enumerations": [
        {
            "name": "Stations",
            "items": ["Alnmouth", "Bamburgh", "Craster", "Dunstan", "Embleton"],
        }
    ],
    "action_items": [],
}


def compile_railway(kb, settings, notes):
    def handler(stage, messages, schema):
        if stage == "extract":
            return FAITHLESS
        return responder_handler(stage, messages, schema)

    src = notes / "railway.md"
    src.write_text(RAILWAY, encoding="utf-8")
    compiler = Compiler(kb, settings, llm_factory=lambda s, **k: FakeLLM(handler))
    result = asyncio.run(compiler.compile_paths([str(src)]))
    assert result.failed == [] and len(result.created) == 1
    extraction = read_extraction(kb, "extraction/the-coastal-railway.md").data
    return extraction, read_article(kb, result.created[0]).body


def test_a_list_cut_at_five_is_kept_whole_and_the_extraction_says_so(kb, settings, notes):
    extraction, body = compile_railway(kb, settings, notes)
    items = extraction["enumerations"][0]["items"]
    assert items[-3:] == ["Felton", "Glanton", "Howick"] and len(items) == 8
    assert any("3 item(s) the model left out were restored" in n for n in extraction["notes"])
    assert "Howick" in body


def test_a_dropped_date_is_kept_with_the_fact_it_dates(kb, settings, notes):
    extraction, body = compile_railway(kb, settings, notes)
    kept = [extraction["summary"], *extraction["facts"]]
    assert "The coastal railway opened on 12 May 1998." in kept
    assert "opened on 12 May 1998" in body


def test_a_summary_that_turns_a_negation_around_does_not_reach_the_wiki(kb, settings, notes):
    extraction, body = compile_railway(kb, settings, notes)
    assert "needs a persistence layer" not in extraction["summary"]
    assert "1,000" not in extraction["summary"]
    assert not re.search(r"needs a persistence", body) and "1,000" not in body
    assert any("2 statement(s) were removed" in n for n in extraction["notes"])


def test_repeated_items_are_said_once(kb, settings, notes):
    extraction, _ = compile_railway(kb, settings, notes)
    assert [f.lower() for f in extraction["facts"]].count("it is 364.6 km long.") == 1
    assert any("repeated item(s) were dropped" in n for n in extraction["notes"])


def test_a_summary_cut_at_its_bound_keeps_only_whole_sentences():
    from compiler.extract import Extraction
    from compiler.fidelity import check_extraction

    cut = Extraction.from_data({"summary": "The team moved the cache. The team's", "facts": []})
    check_extraction(cut, "The team moved the cache. The team's lead agreed.")
    assert cut.summary == "The team moved the cache."
    assert "stopped mid-sentence" in cut.notes[0]
