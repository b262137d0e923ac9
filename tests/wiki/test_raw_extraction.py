import pytest

from kb_ai.errors import KbAiError, PathEscapeError, UsageError
from wiki import (
    ExtractionRecord,
    RawSource,
    list_raw,
    read_extraction,
    read_raw,
    write_extraction,
    write_raw,
)


def _raw(slug="standup-2024-05-02", text="\n---\nLine one\n\n  indented\u2028 tail"):
    return RawSource(
        slug=slug,
        title="Stand-up: no",
        origin="/home/me/notes/standup.md",
        kind="transcript",
        checksum="ab" * 32,
        ingested_at="2024-05-02T10:00:00+00:00",
        text=text,
    )


def test_raw_round_trip_keeps_the_text_byte_for_byte(kb):
    src = _raw()

    rel = write_raw(kb, src)

    assert rel == "raw/standup-2024-05-02.md"
    assert read_raw(kb, rel) == src
    assert list_raw(kb) == [rel]
    head = (kb.root / rel).read_text().split("---\n")[1]
    assert head.splitlines()[:3] == [
        "title: 'Stand-up: no'",
        "origin: /home/me/notes/standup.md",
        "kind: transcript",
    ]


def test_raw_refuses_a_slug_that_is_a_path(kb):
    with pytest.raises(UsageError):
        write_raw(kb, _raw(slug="../escape"))
    with pytest.raises(PathEscapeError):
        read_raw(kb, "wiki/t/a.md")


def test_extraction_round_trip_is_exact(kb):
    data = {
        "summary": "Decided to ship on 2024-05-02; version 1.10",
        "facts": ["```json\n{}\n```", "line\u2028separator", "ünïcödé 数据", ""],
        "decisions": [{"what": "ship", "why": None, "who": ["ann", "bo"], "n": 1.10}],
        "enumerations": {"order": [3, 1, 2]},
    }
    rec = ExtractionRecord(
        source="raw/standup-2024-05-02.md",
        source_checksum="cd" * 32,
        model="openai/gpt-4o-mini",
        prompt_version="3",
        extracted_at="2024-05-02T10:01:00+00:00",
        data=data,
    )

    rel = write_extraction(kb, "standup-2024-05-02", rec)

    assert rel == "extraction/standup-2024-05-02.md"
    back = read_extraction(kb, rel)
    assert back == rec
    assert list(back.data) == list(data)
    text = (kb.root / rel).read_text()
    assert "# Extraction of raw/standup-2024-05-02.md\n\n```json\n{" in text


def test_a_broken_extraction_names_the_file(kb):
    path = kb.extraction_dir / "x.md"
    path.write_text("---\nsource: raw/x.md\n---\n\n# Extraction\n\n```json\n{not json\n```\n")

    with pytest.raises(KbAiError, match="extraction/x.md"):
        read_extraction(kb, "extraction/x.md")
