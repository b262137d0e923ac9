"""kb_ai.grounding on large material: the look-ups that were made cheaper for multi-MB
sources answer as the direct forms did (each kind of claim filtered from all of them,
one pattern of every number word, text joined at every add, every negated pair looked
for in the text)."""

from __future__ import annotations

import random
import re

from kb_ai.grounding import Evidence, Negations, extract_claims
from kb_ai.grounding.claims import NUMBER_WORDS, _number_words
from kb_ai.grounding.support import _FEW_PAIRS

_TEXT = (
    "the cache moved on 2 March 2026 to eu-west-1 after Priya Shah said v2 was 1,000 "
    "jobs twenty one forty-five a dozen seventy hundred ADR-0012 `redis.conf` "
    "https://example.org/a 3.11.2 20GB 364.6 km 2026-03 March 2 May we do not need it "
    "never keep backups without encryption; the job needs no persistence"
)


def _texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    vocabulary = _TEXT.split()
    out = []
    for _ in range(n):
        words = [rng.choice(vocabulary) for _ in range(rng.randint(3, 30))]
        out.append(" ".join(words).capitalize() + rng.choice([".", "", "!", ". Then"]))
    return out


def test_claims_of_some_kinds_are_those_of_every_kind_filtered():
    for text in _texts(1, 1000):
        every = extract_claims(text)
        for kinds in (("date", "number"), ("number",), ("name", "identifier")):
            assert extract_claims(text, kinds) == [c for c in every if c.kind in kinds]


def test_number_words_are_those_one_pattern_of_every_number_word_finds():
    pattern = re.compile(r"\b(" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + r")\b")
    rng = random.Random(2)
    words = [*NUMBER_WORDS, "a", "ones", "twentyone", "twenty_one", "2one", "Twenty", "x"]
    seps = [" ", "-", "  ", ", ", "\n", "", "_", "'", "s "]
    for _ in range(5000):
        text = "".join(rng.choice(words) + rng.choice(seps) for _ in range(rng.randint(1, 9)))
        low = text.lower()
        assert _number_words(low) == {NUMBER_WORDS[w] for w in pattern.findall(low)}, text


def test_material_added_a_piece_at_a_time_supports_what_it_supports_whole():
    pieces = _texts(3, 400)
    whole = Evidence(*pieces)
    grown = Evidence(pieces[0])
    for piece in pieces[1:]:
        grown.add(piece)
    assert grown.flat == whole.flat
    for text in _texts(4, 500):
        assert grown.unsupported(text) == whole.unsupported(text)
    digits = Evidence(*pieces, kinds=("date", "number"))
    for text in _texts(4, 500):
        assert digits.unsupported(text) == whole.unsupported(text, ("date", "number"))


def test_a_source_with_many_negations_finds_the_same_flips():
    nouns = [f"{a}{b}" for a in ("cache", "queue", "relay", "vault") for b in "bcdfghjklm"]
    source = " ".join(f"The {n} does not need a restart." for n in nouns)
    many = Negations(source)
    assert len(many._open) > _FEW_PAIRS  # (the word look-up is the one used)
    texts = [f"The {n} needs a restart." for n in nouns[::8]]
    texts += ["The zebra needs a restart.", "Nothing about it.", "The cacheb needs no restart."]
    assert [t for t in texts if many.flips(t)] == texts[:5]
    for text in texts:  # the source's one sentence about it: the text look-up, the same
        noun = text.split()[1]
        few = Negations(" ".join(f"The {n} does not need a restart." for n in nouns if n == noun))
        assert len(few._open) <= _FEW_PAIRS
        assert bool(few.flips(text)) == bool(many.flips(text)), text


# The patterns as they were written before they were made to start with a digit.
_PATTERNS_BEFORE = {
    "_NUMBER": r"(?<![A-Za-z0-9_.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d])"
    r"|(?<![A-Za-z0-9_.,])\d+(?:\.\d+)?(?![\d])",
    "_UNIT_NUMBER": r"(?<![A-Za-z0-9_.])(\d+(?:\.\d+)?)([A-Za-z]{1,4}|[^\W\d_A-Za-z]{1,4})"
    r"(?![A-Za-z0-9_])",
    "ymd": r"(?<![\d.])(?:1[5-9]\d\d|2\d\d\d)([-/.])(?:0?[1-9]|1[0-2])\1"
    r"(?:[12]\d|3[01]|0?[1-9])(?![\d])",
    "ym": r"(?<![\d.])(?:1[5-9]\d\d|2\d\d\d)-(?:0[1-9]|1[0-2])(?![\d-])",
}


def test_numbers_and_dates_are_found_where_the_patterns_before_found_them():
    from kb_ai.grounding import claims

    now = {"_NUMBER": claims._NUMBER, "_UNIT_NUMBER": claims._UNIT_NUMBER}
    now.update((k, p) for k, p in claims._DATE_PATTERNS if k in ("ymd", "ym"))
    rng = random.Random(5)
    pieces = ["1", "2", "19", "2026", "1,000", ".", ",", "-", "/", "a", "km", "_", " ", "5", "0",
              "12", "١٢", "x1", "3.5", "2026-03", "1999/1/2"]  # fmt: skip
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 12))) for _ in range(20000)]
    for name, before in _PATTERNS_BEFORE.items():
        old = re.compile(before)
        for text in texts:
            found = [(m.span(), m.groups()) for m in now[name].finditer(text)]
            assert found == [(m.span(), m.groups()) for m in old.finditer(text)], (name, text)
