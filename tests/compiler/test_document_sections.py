"""Splitting a long document by its own structure, not by character counts."""

import re

from compiler.documents import span, split_sections


def pages(n, chars=900, start=1):
    return [
        f"<!-- page {i} -->\n\n" + f"Text of page {i}. " * (chars // 18)
        for i in range(start, start + n)
    ]


def test_each_top_level_section_is_one_piece_whatever_its_length():
    doc = "\n\n".join(
        ["# Intro", *pages(2), "# Method", *pages(5, start=3), "# Results", *pages(3, start=8)]
    )
    pieces = split_sections(doc, limit=6_000)
    assert [p.split("\n")[0] for p in pieces] == ["# Intro", "# Method", "# Results"]
    assert [span(p) for p in pieces] == ["pp. 1-2", "pp. 3-7", "pp. 8-10"]


def test_a_section_longer_than_a_call_splits_at_pages_and_never_inside_one():
    doc = "\n\n".join(["# Only chapter", *pages(12)])
    pieces = split_sections(doc, limit=3_000)
    assert len(pieces) == 4
    seen = []
    for piece in pieces:
        seen += re.findall(r"^<!-- page (\d+) -->$", piece, re.M)
        assert len(piece) <= 3_000
    assert seen == [str(i) for i in range(1, 13)]  # every page whole, once, in order


def test_a_piece_starting_inside_a_page_names_that_page_as_continued():
    long_page = "<!-- page 1 -->\n\n" + "\n\n".join(f"Paragraph {i}. " * 20 for i in range(40))
    pieces = split_sections(long_page, limit=2_000)
    assert len(pieces) > 1
    assert all(p.startswith("<!-- page 1 (continued) -->") for p in pieces[1:])
    assert span(pieces[1]) == "p. 1"


def test_a_short_document_is_one_piece():
    doc = "\n\n".join(["# A", *pages(2), "# B", *pages(1, start=3)])
    assert split_sections(doc, limit=24_000) == [doc]


def test_the_outline_lists_the_two_top_levels_in_order():
    from compiler.documents.sections import outline

    doc = "# 1 Basics\n\ntext\n\n## 1.1 Spaces\n\n### 1.1.1 Too deep\n\n# 2 Maps\n\n## 2.1 Charts\n"
    assert outline(doc) == ["1 Basics", "  1.1 Spaces", "2 Maps", "  2.1 Charts"]
    assert outline("# Only\n\n## Two\n") == []
