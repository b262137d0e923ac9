"""Page citations in article sources."""

from compiler.documents.citations import cited, page_ranges, with_pages


def test_pages_cited_in_the_body_are_named_in_the_sources_entry():
    material = (
        "Facts:\n- Retries back off (pp. 3-4)\n- The queue is durable (p. 9)\n- Other (p. 12)"
    )
    body = "Retries back off exponentially (pp. 3-4). The queue is durable (p. 9)."
    out = with_pages(["raw/notes.md", "raw/guide.md#pages=1"], {"raw/guide.md": material}, body)
    assert out == ["raw/notes.md", "raw/guide.md#pages=3-4,9"]


def test_no_cited_page_leaves_the_plain_path_and_ranges_compress():
    assert with_pages(["raw/a.md"], {"raw/a.md": "- x (p. 2)"}, "no tags here") == ["raw/a.md"]
    assert page_ranges([5, 1, 2, 3, 9, 10]) == "1-3,5,9-10"
    assert cited("a (p. 7) b (pp. 2-3)") == {"pages": {2, 3, 7}}


def test_slides_are_cited_like_pages():
    material = "Facts:\n- The roadmap has three themes (slides 2-3)\n- Q3 ships search (slide 5)"
    body = "The roadmap has three themes (slides 2-3)."
    assert with_pages(["raw/deck.md"], {"raw/deck.md": material}, body) == [
        "raw/deck.md#slides=2-3"
    ]
