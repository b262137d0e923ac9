"""Claims a reader can check: each citation of an answer points at the lines of the file
that hold its claim, and the span is checked to support it."""

from retrieval.answer import Answer
from retrieval.pages import Page, read_page
from retrieval.places import Placer, check_span, faithfulness, find_span
from wiki import Article, write_article

BODY = """# Nightly backups

Backups of the main database run nightly at 02:00.

## Keeping copies

Backup copies are kept for thirty days
in a separate account.

| what | how long |
|---|---|
| logs | 14 days |
"""


def article(kb):
    write_article(
        kb,
        Article(
            path="wiki/concept/nightly-backups.md",
            title="Nightly backups",
            type="concept",
            summary="When backups run and how long copies are kept.",
            tags=["backups"],
            sources=["raw/backups.md"],
            created="2026-03-01",
            updated="2026-03-02",
            body=BODY,
        ),
    )
    return kb.root / "wiki/concept/nightly-backups.md"


def line_of(path, text):
    return next(i for i, line in enumerate(path.read_text().split("\n"), 1) if text in line)


def test_a_span_names_the_lines_of_the_file_frontmatter_counted(kb):
    path = article(kb)
    page = read_page(kb, "wiki/concept/nightly-backups.md", 10_000)
    assert page.first_line > 1  # the frontmatter comes first
    span = find_span("Backup copies are kept for thirty days in a separate account.", page)
    assert (span.start, span.end) == (
        line_of(path, "thirty days"),
        line_of(path, "separate account"),
    )
    assert span.anchor == f"#L{span.start}-L{span.end}"
    one = find_span("The logs are kept for 14 days.", page)
    assert one.start == one.end == line_of(path, "| logs |")
    assert one.anchor == f"#L{one.start}"


def test_the_placer_points_each_citation_at_its_claim(kb):
    path = article(kb)
    page = read_page(kb, "wiki/concept/nightly-backups.md", 10_000)
    placer = Placer([page])
    first = placer.feed(
        "Backups run nightly at 02:00 [Nightly backups](wiki/concept/nightly-backups.md). "
    )
    second = placer.feed(
        "Copies are kept for thirty days [Backups](wiki/concept/nightly-backups.md)."
    )
    at = line_of(path, "02:00")
    assert f"(wiki/concept/nightly-backups.md#L{at})" in first
    assert f"#L{line_of(path, 'thirty days')}" in second
    assert [c.claim for c in placer.claims] == [  # the text since the citation before
        "Backups run nightly at 02:00",
        "Copies are kept for thirty days",
    ]
    assert all(c.supported for c in placer.claims) and placer.faithfulness == 1.0
    assert placer.text == (first + second).strip()


def test_a_claim_its_span_does_not_support_is_counted_unfaithful(kb):
    article(kb)
    page = read_page(kb, "wiki/concept/nightly-backups.md", 10_000)
    placer = Placer([page])
    placer.feed(
        "Backup copies are kept for 90 days [Nightly backups](wiki/concept/nightly-backups.md). "
    )
    placer.feed("Backups run nightly at 02:00 [Nightly backups](wiki/concept/nightly-backups.md).")
    bad, good = placer.claims
    assert not bad.supported and "90" in bad.why and good.supported
    assert placer.faithfulness == 0.5
    # what a reader sees under the answer (CLI, chat page, MCP text): the count, and the
    # claim that is not supported, where it points and why
    checked = Answer("", claims=placer.claims).checked
    assert checked.startswith("Cited claims: 1 of 2 supported by the lines they cite; ")
    assert f'not supported: "Backup copies are kept for 90 days" ({bad.path}#L' in checked
    assert "number '90'" in checked or "'90'" in checked, checked
    assert Answer("").checked == ""  # nothing cited (an answer that declines): no line


def test_a_negated_span_does_not_support_the_claim():
    page = Page(
        "wiki/a.md", "Cache", "The session cache needs no persistence.", False, first_line=7
    )
    span = find_span("The session cache needs persistence.", page)
    assert span.start == 7
    assert "source says" in check_span("The session cache needs persistence.", span, page.title)
    assert check_span("The session cache needs no persistence.", span, page.title) == ""


def test_text_with_no_citation_and_outside_links_are_left_as_they_are():
    page = Page("wiki/a.md", "A", "Alpha beta gamma.", False)
    placer = Placer([page])
    shown = placer.feed("See [the docs](https://example.com/alpha) for alpha beta. ")
    assert shown == "See [the docs](https://example.com/alpha) for alpha beta. "
    placer.finish()
    assert placer.claims == [] and placer.uncited == ["See for alpha beta."]
    assert faithfulness([]) is None


def test_a_run_of_quotes_cited_once_is_one_claim_per_sentence_each_in_its_place(kb):
    path = article(kb)
    page = read_page(kb, "wiki/concept/nightly-backups.md", 10_000)
    placer = Placer([page])
    # a small model's quotes: the sentences, then one citation after the run
    placer.feed("Backups of the main database run nightly at 02:00.")
    placer.feed(" The logs are kept for 14 days.")
    shown = placer.feed(" [Nightly backups](wiki/concept/nightly-backups.md)")
    first, second = placer.claims
    assert first.span.start == line_of(path, "02:00") and first.supported
    assert second.span.start == line_of(path, "| logs |") and second.supported
    assert (
        shown
        == f" [Nightly backups](wiki/concept/nightly-backups.md#L{first.span.start}-L{second.span.end})"
    )
    placer.finish()
    assert placer.uncited == [] and placer.faithfulness == 1.0
