"""The shortlist's second search: pages the best hit names, behind what the question finds."""

from __future__ import annotations

from wiki.feedback import KEEP, names_in, search_with_feedback
from wiki.search import SearchDoc, SearchIndex

NOVEL = SearchDoc(
    "novel", "Dead Ernest", "A 1944 mystery novel.", body="The novel is by Phoebe Atwood Taylor."
)
AUTHOR = SearchDoc(
    "author",
    "Phoebe Atwood Taylor",
    "An American writer.",
    body="She set her mysteries on Cape Cod.",
)


def index_of(tmp_path, docs):
    index = SearchIndex.open(tmp_path / "s.db")
    index.upsert(docs)
    return index


def test_a_page_only_the_best_hit_names_is_found(tmp_path):
    index = index_of(tmp_path, [NOVEL, AUTHOR])
    question = "Where was the author of Dead Ernest born?"
    assert [h.path for h in index.search(question)] == ["novel"]  # the question alone
    assert search_with_feedback(index, question, 10) == ["novel", "author"]


def test_what_the_question_finds_best_stays_ahead_of_the_feedback(tmp_path):
    # many pages on the question's words; the author page matches the feedback best
    pages = [
        SearchDoc(f"p{i}", f"Dead Ernest review {i}", "A review.", body="Dead Ernest, reviewed.")
        for i in range(KEEP + 10)
    ]
    index = index_of(tmp_path, [NOVEL, AUTHOR, *pages])
    question = "Who wrote the novel Dead Ernest?"
    own = [h.path for h in index.search(question, limit=50)]
    found = search_with_feedback(index, question, 50)
    assert own[0] == "novel" and found[:KEEP] == own[:KEEP]
    assert "author" in found and "author" not in own[:KEEP]
    assert len(found) == len(set(found))


def test_names_leave_out_sentence_openers_and_the_question_s_own():
    text = "The novel Dead Ernest is by Phoebe Atwood Taylor. In Boston, She wrote it."
    assert names_in(text, "Who wrote Dead Ernest?") == ["Phoebe Atwood Taylor", "Boston"]


def test_no_hit_no_feedback(tmp_path):
    index = index_of(tmp_path, [NOVEL, AUTHOR])
    assert search_with_feedback(index, "zzqx", 10) == []
