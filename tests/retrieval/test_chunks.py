"""Cutting a written answer, as it streams, into the sentences that are each checked and
cited (retrieval/chunks.py)."""

from retrieval.chunks import SentenceCutter


def cut(*pieces):
    cutter = SentenceCutter()
    out = [s for piece in pieces for s in cutter.feed(piece)]
    return out + cutter.flush()


def test_a_sentence_ends_at_its_stop_with_its_citations_and_not_at_a_decimal_point():
    assert cut("Backups run at 02:00 [Backups](wiki/b.md). The line is 364.6 km", " long.") == [
        "Backups run at 02:00 [Backups](wiki/b.md). ",
        "The line is 364.6 km long.",
    ]


def test_code_spans_ellipses_abbreviations_and_initials_do_not_end_a_sentence():
    """Each piece is checked, and given a citation, as a sentence: a cut inside
    `SELECT ... FOR UPDATE` put a citation in the middle of the code."""
    pieces = [
        "Workers claim jobs with `SELECT ... FOR",
        " UPDATE SKIP LOCKED` [Queue](wiki/q.md). Redis was ruled out, e.g. Jobs",
        " would be lost. Dr. Okafor and J. Smith agreed. Wait... then poll. Done.",
    ]
    assert cut(*pieces) == [
        "Workers claim jobs with `SELECT ... FOR UPDATE SKIP LOCKED` [Queue](wiki/q.md). ",
        "Redis was ruled out, e.g. Jobs would be lost. ",
        "Dr. Okafor and J. Smith agreed. ",
        "Wait... then poll. ",
        "Done.",
    ]
