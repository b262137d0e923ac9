"""kb_ai.grounding: the mechanical checks between a model's text and what it was given."""

from __future__ import annotations

import pytest

from kb_ai.grounding import (
    Evidence,
    MarkupError,
    ends_on_sentence,
    extract_claims,
    find_repetition,
    fit_sentences,
    is_html,
    negation_flips,
    number_value,
    remove_unsupported,
    split_sentences,
    to_markdown,
    unsupported_claims,
)


def claims(text: str) -> list[tuple[str, str]]:
    return [(c.kind, c.value) for c in extract_claims(text)]


# -- claims ------------------------------------------------------------------------------


def test_numbers_are_claimed_in_any_spelling():
    assert claims("It moved 1,000 jobs over 364.6 km.") == [
        ("number", "1000"),
        ("number", "364.6"),
    ]
    assert number_value("１,０００") == "1000"
    assert number_value("364.60") == "364.6"


def test_numbers_in_chinese_text_are_claimed():
    assert claims("全长约1000公里，其中364.6公里已开通。") == [
        ("number", "1000"),
        ("number", "364.6"),
    ]


def test_dates_in_several_spellings_are_one_date():
    for text in ("on 2 March 2026", "on March 2, 2026", "on 2026-03-02", "于2026年3月2日"):
        assert ("date", "2026-03-02") in claims(text), text
    assert claims("in March 2026") == [("date", "2026-03")]


def test_names_are_capitalised_words_that_do_not_open_a_sentence():
    found = claims("Install the package. Then ask Priya Shah or the Home Office.")
    assert found == [("name", "priya shah"), ("name", "home office")]


def test_identifiers_are_files_codes_acronyms_and_urls():
    found = claims("See `redis.conf`, ADR-0012, the TTL, v2 and https://example.org/a.")
    assert ("identifier", "redis.conf") in found
    assert ("identifier", "adr-0012") in found
    assert ("identifier", "ttl") in found
    assert ("identifier", "v2") in found
    assert ("identifier", "https://example.org/a") in found


def test_list_numbers_link_targets_and_heading_words_are_not_claims():
    text = "## Key Decisions\n\n1. Run [the guide](wiki/howto/x-2.md)\n2. Stop"
    assert claims(text) == []


# -- support -----------------------------------------------------------------------------


MATERIAL = (
    "The line is 364.6 km long and has 24 stations. It opened on 2 March 2026. "
    "Priya Shah leads the team; two teams use it. The cache needs no persistence."
)


def test_an_invented_number_is_unsupported_and_a_stated_one_is_not():
    found = unsupported_claims("全长约1000公里。The line is 364.6 km long.", MATERIAL)
    assert [(c.kind, c.value) for c in found] == [("number", "1000")]


def test_spellings_of_the_same_fact_support_each_other():
    text = "It opened on 2026-03-02 (March 2026); Priya leads 2 teams with 24 stations."
    assert unsupported_claims(text, MATERIAL) == []


def test_outside_knowledge_with_a_name_and_a_year_is_unsupported():
    text = "Redis was created by Salvatore Sanfilippo in 2009."
    found = [(c.kind, c.value) for c in unsupported_claims(text, MATERIAL)]
    assert ("name", "salvatore sanfilippo") in found
    assert ("number", "2009") in found


def test_remove_unsupported_drops_only_the_sentences_and_items_that_fail():
    text = (
        "The line is 364.6 km long. It cost 5 million pounds.\n\n"
        "- 24 stations\n- 99 stops\n\n## History\n\nIt opened on 2 March 2026."
    )
    kept, removed = remove_unsupported(text, Evidence(MATERIAL))
    assert kept == (
        "The line is 364.6 km long.\n\n- 24 stations\n\n## History\n\nIt opened on 2 March 2026."
    )
    assert removed == ["It cost 5 million pounds.", "- 99 stops"]


def test_a_negation_turned_around_is_caught():
    flips = negation_flips("The cache needs persistence.", MATERIAL)
    assert len(flips) == 1
    assert flips[0].source == "The cache needs no persistence."
    assert negation_flips("The cache needs no persistence at all.", MATERIAL) == []
    assert negation_flips("Redis needs persistence.", "Redis does not need persistence."), (
        "a 'does not need' in the source"
    )


def test_a_source_that_says_both_is_not_a_flip():
    source = "The cache needs no persistence today. Later the cache needs persistence."
    assert negation_flips("The cache needs persistence.", source) == []


# -- shape -------------------------------------------------------------------------------


def test_a_paragraph_repeated_until_the_cap_is_found():
    para = "Redis is used as the session cache for the web application."
    found = find_repetition("\n\n".join([para] * 12) + "\n\nRedis is used as the ses")
    assert [(r.kind, r.count) for r in found] == [("paragraph", 12)]


def test_a_sentence_repeated_inside_paragraphs_is_found():
    text = (
        "The queue is durable. It keeps jobs for a week.\n\nIt keeps jobs for a week. It is fast."
    )
    assert [(r.kind, r.text) for r in find_repetition(text)] == [
        ("sentence", "It keeps jobs for a week.")
    ]


def test_short_repeats_are_not_repetition():
    assert find_repetition("## Notes\n\nYes.\n\n## Notes\n\nYes.") == []


@pytest.mark.parametrize(
    ("text", "whole"),
    [
        ("The queue is durable.", True),
        ("It is done!", True),
        ("已经完成。", True),
        ("- Redis 7\n- Postgres 16", True),
        ("| a | b |\n|---|---|\n| 1 | 2 |", True),
        ("```\ncode\n```", True),
        ("The team's", False),
        ("It keeps jobs for a we", False),
        ("- Redis and", False),
        ("```\ncode that never ends", False),
    ],
)
def test_ends_on_sentence(text, whole):
    assert ends_on_sentence(text) is whole


def test_fit_sentences_never_cuts_inside_a_sentence():
    text = "The team moved to Postgres. The old Redis instance was retired in March."
    assert fit_sentences(text, 200) == text
    assert fit_sentences(text, 40) == "The team moved to Postgres."
    assert fit_sentences(text, 10) is None
    assert fit_sentences("The team's", 300) is None
    assert fit_sentences("Traditionally we had 4 mo", 300) is None, "cut: no full stop"
    assert fit_sentences("Redis was retired.", 300) == "Redis was retired."


def test_split_sentences_keeps_decimals_and_splits_chinese():
    assert split_sentences("It is 364.6 km. It has 24 stations.") == [
        "It is 364.6 km.",
        "It has 24 stations.",
    ]
    assert split_sentences("全长364.6公里。共24站。") == ["全长364.6公里。", "共24站。"]


# -- markup ------------------------------------------------------------------------------


def test_html_paragraphs_in_a_markdown_wrapper_become_markdown():
    reply = (
        "<markdown><p>The queue is <b>durable</b>.</p>"
        "<h2>Steps</h2><ol><li>Install it</li><li>Run &amp; check</li></ol>"
        "<p>See <a href='https://example.org'>the guide</a>.</p></markdown>"
    )
    assert is_html(reply)
    assert to_markdown(reply) == (
        "The queue is **durable**.\n\n## Steps\n\n1. Install it\n2. Run & check\n\n"
        "See [the guide](https://example.org)."
    )


def test_markdown_with_angle_brackets_is_not_html():
    text = "Use `<p>` tags in templates; List<T> and <https://example.org> are fine."
    assert not is_html(text)
    assert to_markdown(text) == text


def test_html_without_a_markdown_form_is_refused():
    with pytest.raises(MarkupError, match="<table>"):
        to_markdown("<table><tr><td>1</td></tr></table>")
    with pytest.raises(MarkupError, match="<script>"):
        to_markdown("<p>x</p><script>alert(1)</script>")


def test_a_negation_that_opens_the_clause_is_caught_when_dropped():
    source = "We will not change the current vcloud based platforms."
    assert negation_flips("We will change the current vcloud based platforms.", source)
    assert negation_flips(source, source) == []
    shared = "It is a shared resource, but it is not managed by us."
    assert negation_flips("but it is managed by us.", shared)


def test_remove_unsupported_keeps_the_good_sentences_of_a_list_item():
    text = "- It has 24 stations. It cost 5 million pounds.\n- It is 364.6 km long."
    kept, removed = remove_unsupported(text, Evidence(MATERIAL))
    assert kept == "- It has 24 stations.\n- It is 364.6 km long."
    assert removed == ["It cost 5 million pounds."]


def test_tens_written_as_words_support_their_digits():
    # The embedded model answered "30 days" from a note saying "thirty days"; the check
    # took 30 for an invented number and the right answer became "not covered".
    from kb_ai.grounding import Evidence

    evidence = Evidence("Each backup is kept for thirty days; a job is retried forty-five times.")

    assert evidence.unsupported("Each backup is kept for 30 days.") == []
    assert evidence.unsupported("A job is retried 45 times.") == []
    assert evidence.unsupported("Each backup is kept for 31 days.") != []


def test_material_of_several_texts_supports_what_each_states():
    # Each text of a material is indexed apart and remembered (a source is indexed for
    # its extraction's check, then again in its article's material): the material states
    # what any of them does, a long text too, and a text read again, from memory or
    # after it was forgotten, gives the same answers; what one material adds is not
    # given to the next material with the same text.
    from kb_ai.grounding import Evidence, forget_remembered

    source = "On 2 March 2026 Priya moved 1,000 jobs to the `jobs-v2` queue."
    long_text = "Filler sentence. " * 2_000 + "The replica in Leeds answers in 40 ms."
    forget_remembered()
    for read in ("first", "remembered", "forgotten"):
        if read == "forgotten":
            forget_remembered()
        evidence = Evidence("Queue move", source, "", long_text)
        assert evidence.unsupported("Priya moved 1000 jobs on 2026-03-02 to jobs-v2.") == []
        assert evidence.unsupported("The Leeds replica answers in 40 ms.") == []
        assert [c.value for c in evidence.unsupported("Priya moved 2,000 jobs.")] == ["2000"]
        evidence.add("Then Priya moved 2,000 more.")
        assert evidence.unsupported("Priya moved 2,000 jobs.") == []
    # a date's parts in two texts: the day in one and the year in the other still count
    apart = Evidence("It was decided on 2 March.", "That was 2026.")
    assert apart.unsupported("It was decided on 2026-03-02.") == []
