"""Merging the extractions of a source's chunks: in order, each item once, in linear work."""

import asyncio
import threading

from compiler import extract
from compiler.extract import Extraction, extract_source, merge_extractions
from compiler.run import PROMPTS
from compiler.sources import source_from_text
from tests.fakes.fake_llm import FakeLLM


class CountingStr(str):
    """A str that counts how often it is compared for equality (list scans do that)."""

    comparisons = 0

    def __eq__(self, other):
        CountingStr.comparisons += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def chunk_extraction(i: int) -> Extraction:
    return Extraction.from_data(
        {
            "title": f"Part {i}",
            "summary": f"Chunk {i}.",
            "facts": [CountingStr(f"Fact {j} of chunk {i}.") for j in range(30)],
            "concepts": [{"name": f"Concept {i}-{j}", "description": "d"} for j in range(12)],
        }
    )


def test_merging_many_chunks_does_work_in_proportion_to_the_items():
    parts = [chunk_extraction(i) for i in range(200)]
    for p in parts:  # from_data keeps the strings as given
        p.facts = [CountingStr(f) for f in p.facts]
    CountingStr.comparisons = 0
    merged = merge_extractions(parts)
    assert len(merged.facts) == 200 * 30 and len(merged.concepts) == 200 * 12
    # comparing each new item with every one kept made ~18 million comparisons here
    assert CountingStr.comparisons <= 10 * 200 * 30


def test_merge_keeps_chunk_order_and_drops_repeats_that_differ_in_case_or_spacing():
    a = Extraction.from_data(
        {
            "title": "",
            "summary": "First.",
            "topics": ["DNS", "terraform"],
            "facts": ["The zone has 40 records.", "Puppet ran hourly."],
            "enumerations": [{"name": "steps", "items": ["export", "import"]}],
        }
    )
    b = Extraction.from_data(
        {
            "title": "DNS move",
            "summary": "Second.",
            "topics": ["dns", "Puppet"],
            "facts": ["the zone  has 40 records.", "Terraform owns it now."],
            "enumerations": [{"name": "Steps", "items": ["Export", "import"]}],
        }
    )
    merged = merge_extractions([a, b])
    assert merged.title == "DNS move" and merged.summary == "First. Second."
    assert merged.topics == ["DNS", "terraform", "Puppet"]
    assert merged.facts == [
        "The zone has 40 records.",
        "Puppet ran hourly.",
        "Terraform owns it now.",
    ]
    assert merged.enumerations == [{"name": "steps", "items": ["export", "import"]}]


def test_a_large_source_is_merged_off_the_event_loop(monkeypatch):
    threads = []
    real = extract.merge_extractions

    def recording(parts):
        threads.append(threading.current_thread())
        return real(parts)

    monkeypatch.setattr(extract, "merge_extractions", recording)

    def handler(stage, messages, schema):
        last = messages[-1]["content"].split("Paragraph ")[-1].split()[0]
        empty = {k: [] for k in ("topics", "entities", "decisions", "enumerations")}
        return {
            **empty,
            "action_items": [],
            "title": "Log",
            "summary": "A log.",
            "facts": [f"Paragraph {last} fact {j}." for j in range(30)],
            "concepts": [{"name": f"c{j} {last}", "description": "d"} for j in range(12)],
        }

    body = "\n\n".join(f"Paragraph {i} of the operations log." for i in range(4000))
    source = source_from_text("log", "Log", body, chunk_chars=2_000, max_bytes=10**7)
    assert len(source.chunks) > 60  # enough items to be worth a thread
    result = asyncio.run(extract_source(FakeLLM(handler), PROMPTS, source))
    assert result.facts and threads and threads[0] is not threading.main_thread()
