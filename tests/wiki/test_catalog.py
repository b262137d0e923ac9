import pytest

from wiki import (
    Article,
    CatalogEntry,
    build_catalog,
    current_catalog,
    entry_for,
    format_entry,
    load_catalog,
    parse_master_index,
    write_article,
    write_indexes,
)

ENTRIES = [
    CatalogEntry("wiki/topic/search.md", "Search", "How lookups work.", [], "topic", ["infra"]),
    CatalogEntry(
        "wiki/process/release.md",
        "Release [v1.10]",
        "What ships | when",
        ["billing-api", "Smith, John", "a|b"],
        "process",
        ["infra", "release"],
    ),
    CatalogEntry("wiki/decision/empty.md", "No summary", "", ["k"], "decision", []),
]


def test_master_index_line_format():
    entry = CatalogEntry(
        "wiki/process/release.md", "Release checklist", "What ships when.", ["billing", "auth"]
    )
    assert format_entry(entry) == (
        "- [Release checklist](wiki/process/release.md) — What ships when. | keys: billing, auth"
    )
    entry.keys = []
    assert (
        format_entry(entry) == "- [Release checklist](wiki/process/release.md) — What ships when."
    )


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.path)
def test_parse_is_the_inverse_of_format(entry):
    untagged = CatalogEntry(entry.path, entry.title, entry.summary, entry.keys, entry.type, [])
    assert parse_master_index(format_entry(untagged)) == [untagged]


def test_parse_tolerates_hand_edits():
    text = (
        "# Master index\n\nSome words a person added.\n\n"
        "* [Search](wiki/topic/search.md) - How lookups work.   |  keys: a ,b\r\n"
        "- [Bare](wiki/topic/bare.md)\n"
        "- not an entry\n"
    )
    assert parse_master_index(text) == [
        CatalogEntry("wiki/topic/search.md", "Search", "How lookups work.", ["a", "b"], "topic"),
        CatalogEntry("wiki/topic/bare.md", "Bare", "", [], "topic"),
    ]


def test_write_indexes_is_deterministic_and_loads_back(kb):
    write_indexes(kb, ENTRIES)
    master = kb.master_index_path.read_bytes()
    topics = kb.topics_path.read_bytes()

    write_indexes(kb, list(reversed(ENTRIES)))

    assert kb.master_index_path.read_bytes() == master
    assert kb.topics_path.read_bytes() == topics
    lines = master.decode().splitlines()
    assert lines[0] == "# Master index"
    entry_lines = [line for line in lines if line.startswith("- [")]
    assert [line.split("](")[1].split(")")[0] for line in entry_lines] == sorted(
        e.path for e in ENTRIES
    )
    text = topics.decode()
    assert text.index("## infra") < text.index("## release")
    assert "## infra\n\n- [Release \\[v1.10\\]](wiki/process/release.md)\n" in text
    assert load_catalog(kb) == sorted(ENTRIES, key=lambda e: e.path)


def test_load_catalog_is_empty_without_an_index(kb):
    assert load_catalog(kb) == []


def test_entries_from_articles_derive_keys_from_tables(kb):
    body = "| Name | Role |\n|---|---|\n| Ann | lead |\n| Bo | dev |\n"
    article = Article(
        "wiki/team/people.md",
        "People",
        "team",
        "Who does what.",
        ["team", "org"],
        ["raw/a.md"],
        "2024-01-01",
        "2024-01-01",
        body,
    )
    write_article(kb, article)

    assert entry_for(article) == CatalogEntry(
        "wiki/team/people.md", "People", "Who does what.", ["Ann", "Bo"], "team", ["org", "team"]
    )
    write_indexes(kb, build_catalog(kb))
    assert load_catalog(kb) == [entry_for(article)]
    assert "- [People](wiki/team/people.md) — Who does what. | keys: Ann, Bo\n" in (
        kb.master_index_path.read_text()
    )


def _article(slug: str, title: str, summary: str = "About it.") -> Article:
    return Article(
        f"wiki/topic/{slug}.md",
        title,
        "topic",
        summary,
        ["infra"],
        ["raw/a.md"],
        "2024-01-01",
        "2024-01-01",
        f"# {title}\n\nText.\n",
    )


@pytest.fixture
def indexed_wiki(kb, article_reads):
    """Three articles and indexes written for them; returns (kb, fingerprint, reads), where
    reads lists every article read from disk from then on."""
    import wiki.catalog

    for slug in ("alpha", "beta", "gamma"):
        write_article(kb, _article(slug, slug.title()))
    fingerprint = write_indexes(kb, build_catalog(kb))
    return kb, fingerprint, article_reads(wiki.catalog)


def test_current_catalog_trusts_the_indexes_it_wrote_and_reads_no_article(indexed_wiki):
    kb, fingerprint, reads = indexed_wiki
    catalog = current_catalog(kb, fingerprint)
    assert reads == []
    assert [e.title for e in catalog] == ["Alpha", "Beta", "Gamma"]
    assert catalog == build_catalog(kb)


def test_current_catalog_reads_articles_changed_added_or_deleted_since(indexed_wiki):
    kb, fingerprint, reads = indexed_wiki
    import os
    import time

    write_article(kb, _article("beta", "Beta, renamed by hand"))
    later = time.time_ns() + 5_000_000_000  # whatever the clock's resolution
    os.utime(kb.root / "wiki/topic/beta.md", ns=(later, later))
    write_article(kb, _article("delta", "Delta"))
    (kb.root / "wiki/topic/gamma.md").unlink()

    titles = [e.title for e in current_catalog(kb, fingerprint)]
    assert titles == ["Alpha", "Beta, renamed by hand", "Delta"]
    assert sorted(reads) == ["wiki/topic/beta.md", "wiki/topic/delta.md"]


def test_current_catalog_rebuilds_when_the_indexes_were_edited_or_never_fingerprinted(
    indexed_wiki,
):
    kb, fingerprint, reads = indexed_wiki
    text = kb.master_index_path.read_text(encoding="utf-8")
    kb.master_index_path.write_text(text.replace("About it.", "Edited by hand."), encoding="utf-8")
    assert {e.summary for e in current_catalog(kb, fingerprint)} == {"About it."}
    assert len(reads) == 3
    reads.clear()
    assert len(current_catalog(kb, None)) == 3 and len(reads) == 3


def test_splitting_at_unescaped_separators_matches_its_definition():
    """Fuzzed against the definition: a backslash keeps the next character (a separator
    too) in the part; a lone trailing backslash is plain text."""
    import random

    from wiki.catalog import _split_unescaped

    def by_definition(text, sep):
        parts, current, i = [], "", 0
        while i < len(text):
            if text[i] == "\\" and i + 1 < len(text):
                current += text[i : i + 2]
                i += 2
            elif text[i] == sep:
                parts.append(current)
                current = ""
                i += 1
            else:
                current += text[i]
                i += 1
        return [*parts, current]

    rng = random.Random(5)
    for _ in range(3000):
        text = "".join(rng.choice("ab\\|,\n ") for _ in range(rng.randint(0, 14)))
        for sep in "|,":
            assert _split_unescaped(text, sep) == by_definition(text, sep), (text, sep)


TRICKY = [
    *ENTRIES,
    CatalogEntry("wiki/x/spaced.md", "  Two   spaces\n", " A  summary\twith tabs ", [" k ", ""],
                 "not-its-folder", ["  two  words ", "", "infra", "Infra"]),
    CatalogEntry("wiki/x/back.md", "Ends in a backslash \\", "a \\ b \\| c", ["x\\,y", "p|q"]),
    CatalogEntry("wiki/x/a b.md", "A path no index line can hold", "gone on reading back"),
]  # fmt: skip


def _loaded(entries):
    return [(e, e.line, e.tags) for e in entries]


def test_the_indexes_a_process_wrote_load_back_without_parsing_as_parsing_gives(kb):
    """A long-lived process (the web server's worker) loads the catalog a run before it
    wrote from what it wrote, not by parsing the files: the same entries, lines and tags
    as parsing them, for entries read from a master index and entries made from
    articles alike; indexes someone else wrote since are parsed."""
    from wiki.catalog import _as_written, index_fingerprint

    first = write_indexes(kb, TRICKY)
    assert _loaded(_as_written(kb, first)) == _loaded(load_catalog(kb, keep_lines=True))
    read_back = load_catalog(kb, keep_lines=True)  # (entries with their lines)
    second = write_indexes(kb, [*read_back[1:], *TRICKY[:2]])  # lines and no lines, mixed
    remembered = _as_written(kb, second)
    assert _loaded(remembered) == _loaded(load_catalog(kb, keep_lines=True))
    assert "wiki/x/a b.md" not in {e.path for e in remembered}
    assert remembered[0] is not read_back[1]  # (new objects: a run's changes stay its own)

    odd = [  # a file name the line pattern cannot hold: the files are parsed
        CatalogEntry("wiki/x/a.md", "A", "s", tags=["t1"]),
        CatalogEntry("wiki/x/a.md)b.md", "B", "s", tags=["t2"]),
        CatalogEntry("wiki/x/c.md)\n- [Fake](wiki/x/f.md", "C", "s"),
    ]
    assert _as_written(kb, write_indexes(kb, odd)) is None

    other = ENTRIES[1:]  # another server's indexes since: the files and fingerprint theirs
    kb.master_index_path.write_text(
        "# Master index\n\n" + "".join(f"{format_entry(e)}\n" for e in other), encoding="utf-8"
    )
    assert _as_written(kb, index_fingerprint(kb)) is None


def test_a_run_after_one_in_the_same_process_reads_neither_index_nor_article(
    indexed_wiki, monkeypatch
):
    import wiki.catalog

    kb, fingerprint, reads = indexed_wiki
    monkeypatch.setattr(wiki.catalog, "load_catalog", lambda *a, **k: pytest.fail("parsed"))
    catalog = current_catalog(kb, fingerprint)
    assert reads == [] and [e.title for e in catalog] == ["Alpha", "Beta", "Gamma"]
    assert catalog == build_catalog(kb)


def test_a_process_that_did_not_write_the_indexes_parses_them_and_reads_no_article(
    indexed_wiki, monkeypatch
):
    """A CLI process, or another server: the indexes are read once (fingerprinted and
    parsed from the same bytes), and no article is read."""
    from pathlib import Path

    import wiki.catalog

    kb, fingerprint, reads = indexed_wiki
    wiki.catalog._WRITTEN.clear()
    opened: list[str] = []
    read_bytes = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda p: opened.append(p.name) or read_bytes(p))
    monkeypatch.setattr(Path, "read_text", lambda *a, **k: pytest.fail("read again"))
    catalog = current_catalog(kb, fingerprint)
    assert reads == [] and sorted(opened) == ["master-index.md", "topics.md"]
    monkeypatch.undo()
    assert catalog == build_catalog(kb)
    assert [(e.line, e.tags) for e in catalog] == [
        (e.line, e.tags) for e in load_catalog(kb, keep_lines=True)
    ]
