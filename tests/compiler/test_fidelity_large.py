"""Extraction fidelity on large inputs: the indexed checks give the verdicts the direct
comparisons gave (each of the model's lists with each of the source's, every pattern on
every item), on inputs the size of a multi-MB source's merged extraction.

The references below are the checks as they were written before they were indexed
(compiler/fidelity.py at 76ee91f): plain loops, kept here as the specification."""

from __future__ import annotations

import random

from compiler._containment import contained
from compiler.extract import Extraction
from compiler.fidelity import _REPEATED_PHRASE, _complete_lists, _key, _may_repeat

_SYLLABLES = ["al", "bor", "cen", "dra", "ex", "fol", "gan", "hor", "ist", "jun", "ka", "lo"]


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 5)))


def _phrase(rng: random.Random, words: list[str]) -> str:
    return " ".join(rng.choice(words) for _ in range(rng.randint(1, 7)))


def _related(rng: random.Random, key: str) -> str:
    """A key the same, cut at both ends (mid-word too), or with words around it."""
    roll = rng.random()
    if roll < 0.3:
        return key
    if roll < 0.65 and len(key) > 4:
        start = rng.randint(0, len(key) // 3)
        return key[start : rng.randint(start + 1, len(key))].strip()
    return " ".join(filter(None, [_word(rng) if rng.random() < 0.7 else "", key, _word(rng)]))


def test_contained_finds_exactly_the_keys_inside_others():
    rng = random.Random(7)
    words = [_word(rng) for _ in range(60)]
    longs = [_phrase(rng, words) for _ in range(400)]
    shorts = [_related(rng, rng.choice(longs)) for _ in range(600)]
    shorts += [_phrase(rng, words) for _ in range(200)]
    shorts = [" ".join(s.split()) for s in shorts]
    expected = {
        (i, j)
        for i, s in enumerate(shorts)
        for j, long in enumerate(longs)
        if len(s) >= 12 and s in long
    }
    assert expected  # (the draw holds keys inside others, cut mid-word among them)
    assert any(len(shorts[i].split()) == 1 for i, _ in expected)
    assert any(len(shorts[i].split()) == 2 for i, _ in expected)
    assert contained(shorts, longs) == expected


def _reference_complete_lists(ex: Extraction, source: str) -> None:
    from compiler.fidelity import _source_lists

    def same_item(key: str, have: set[str]) -> bool:
        if key in have:
            return True
        return len(key) >= 12 and any(len(h) >= 12 and (key in h or h in key) for h in have)

    lists = _source_lists(source)
    for enum in ex.enumerations:
        have = {_key(i) for i in enum["items"]}
        best, best_hits = None, 0
        for lst in lists:
            hits = sum(1 for i in lst if same_item(_key(i), have))
            if hits > best_hits:
                best, best_hits = lst, hits
        if best is None or best_hits * 2 < len(enum["items"]):
            continue
        missing = len(best) - best_hits
        if missing > 0:
            enum["items"] = list(best)
            label = enum["name"] or "a list"
            ex.notes.append(
                f"{label}: {missing} item(s) the model left out were restored from the source"
            )


def _large_source_and_enumerations(seed: int) -> tuple[str, list[dict]]:
    """A source of 120 lists (items repeated across lists, some in two forms) and 300
    enumerations cut from them the ways a model cuts: shortened, reworded at the ends,
    items dropped, lists mixed, items of none."""
    rng = random.Random(seed)
    words = [_word(rng) for _ in range(200)]
    pool = [_phrase(rng, words).capitalize() for _ in range(1500)]
    lists = [rng.sample(pool, rng.randint(2, 12)) for _ in range(120)]
    parts = []
    for n, items in enumerate(lists):
        parts.append(f"Paragraph {n} about the list.")
        parts.append("\n".join(f"- {item}" + ("\n  - nested" if rng.random() < 0.1 else "")
                               for item in items))  # fmt: skip
    enums = []
    for n in range(300):
        base = rng.choice(lists)
        items = [_related(rng, _key(i)) for i in base if rng.random() < 0.7]
        if rng.random() < 0.3:
            items += [_key(i) for i in rng.choice(lists)[:3]]
        if rng.random() < 0.2:
            items.append(_phrase(rng, words))
        if items:
            enums.append({"name": f"list {n}" if n % 5 else "", "items": items})
    return "\n\n".join(parts), enums


def test_list_completion_on_a_large_source_is_what_comparing_every_pair_gives():
    for seed in (1,):
        source, enums = _large_source_and_enumerations(seed)
        indexed = Extraction(enumerations=[dict(e, items=list(e["items"])) for e in enums])
        direct = Extraction(enumerations=[dict(e, items=list(e["items"])) for e in enums])
        _complete_lists(indexed, source)
        _reference_complete_lists(direct, source)
        assert indexed.enumerations == direct.enumerations
        assert indexed.notes == direct.notes
        assert len(direct.notes) > 30  # (lists were completed: the check did work)


def test_an_item_the_pattern_finds_repeating_is_never_passed_over():
    rng = random.Random(3)
    words = ["the", "cache", "The", "queue", "x1", "état", "à", "we", "go"]
    seps = [" ", ", ", " - ", "  ", ". "]
    items = []
    for _ in range(8_000):
        phrase = "".join(rng.choice(words) + rng.choice(seps) for _ in range(rng.randint(2, 8)))
        copies = rng.randint(1, 4)
        noise = "".join(rng.choice(words) + rng.choice(seps) for _ in range(rng.randint(0, 5)))
        items.append(noise + phrase * copies + noise)
    found = [i for i in items if _REPEATED_PHRASE.search(i)]
    assert len(found) > 400
    assert all(_may_repeat(i) for i in found)
    assert sum(1 for i in items if not _may_repeat(i)) > 400  # (and it spares the pattern)
