"""A long document becomes a document article too: its outline, each section with the
pages it spans, and links to the subject articles it fed."""

import asyncio

from compiler import Compiler
from compiler.documents.sections import outline_sections
from tests.conftest import needs_shared_data, shared_data
from wiki import read_article

DATA = shared_data("documents")


def test_each_section_spans_the_pages_up_to_the_next_of_its_level():
    text = "\n".join([
        "<!-- page 1 -->", "Title page.",
        "# 1 Basics", "## 1.1 Spaces", "<!-- page 2 -->", "Spaces are sets.",
        "<!-- page 3 -->", "More on spaces.",
        "## 1.2 Maps", "Maps start mid-page.", "<!-- page 4 -->", "Maps continue.",
        "# 2 Curves", "<!-- page 5 -->", "Curves.", "<!-- page 6 -->", "The end.",
    ])  # fmt: skip
    got = [(s.level, s.title, s.first, s.last) for s in outline_sections(text)]
    assert got == [
        (0, "1 Basics", 2, 4),
        (1, "1.1 Spaces", 2, 3),
        (1, "1.2 Maps", 3, 4),
        (0, "2 Curves", 5, 6),
    ]


@needs_shared_data("documents")
def test_the_thesis_gets_an_outline_article_linking_what_it_fed(kb, settings, fake_llm):
    compiler = Compiler(kb, settings, llm_factory=lambda s, **k: fake_llm)
    paths = [str(DATA / "GeoTopo-komprimiert.pdf"), str(DATA / "pdflatex-outline.pdf")]
    result = asyncio.run(compiler.compile_paths(paths))
    assert not result.failed
    outlines = [p for p in result.created if p.endswith("-outline.md")]
    assert len(outlines) == 1  # the 4-page document is not long: no outline of its own
    article = read_article(kb, outlines[0])
    assert article.type == "reference" and article.sources == ["raw/geometrie-und-topologie.md"]
    assert "  - 1.2 Metrische Räume (pp. 10-12)" in article.body
    assert "- 5 Krümmung (pp. 91-102)" in article.body
    subjects = [
        p
        for p in result.created
        if p not in outlines
        and any(s.startswith("raw/geometrie-und-topologie.md") for s in read_article(kb, p).sources)
    ]
    assert subjects
    for path in subjects:
        assert f"[[{path}|" in article.body


@needs_shared_data("documents")
def test_an_article_citing_pages_is_found_by_lint_and_removal(kb, settings, fake_llm, tmp_path):
    """A sources entry that names pages ("raw/x.md#pages=1-3") is still that source: lint
    found it missing, and removing the document left its article behind."""
    from compiler.removal import find_sources, remove_sources
    from wiki.lint import lint_wiki

    invoice = tmp_path / "invoice.pdf"
    invoice.write_bytes((DATA / "REPAIR-2022-INV-001_multipage.pdf").read_bytes())
    compiler = Compiler(kb, settings, llm_factory=lambda s, **k: fake_llm)
    result = asyncio.run(compiler.compile_paths([str(invoice)]))
    [path] = result.created
    assert "#pages=" in read_article(kb, path).sources[0]
    findings = [f for f in lint_wiki(kb).findings if f.check in ("missing-source", "unused-source")]
    assert findings == []
    removed = asyncio.run(
        remove_sources(
            kb,
            settings,
            find_sources(kb, [str(invoice)]),
            reason="test",
            llm_factory=lambda s, **k: fake_llm,
        )  # fmt: skip
    )
    assert removed.deleted == [path]
    assert not (kb.root / path).exists()
