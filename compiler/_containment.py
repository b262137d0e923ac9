"""Which keys stand inside which: many short texts looked for in many long ones at once.

A key is words of letters and digits, lower case, one space between (fidelity's
``_key``). Comparing every short key with every long one cost a large source minutes
(its lists against the model's, each with each); here each short key is filed under
one thing every long key holding it must have, and only the long keys that have it
are searched:

- a key of three words or more: its rarest inner word, whole (the inner words of a
  key inside another are whole words of it);
- of two words: the first six letters of the second (the start of a word of the long
  key), or, when the second is shorter, the last six of the first (an end of one);
- of one word: its first six letters, somewhere inside one long word.

The answer is exact (each candidate is confirmed with ``in``); only the work is less.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

_PIECE = 6  # letters of a partial word a key is filed under


def contained(shorts: Sequence[str], longs: Sequence[str], least: int = 12) -> set[tuple[int, int]]:
    """Every (i, j) where ``shorts[i]``, of at least ``least`` characters, stands in
    ``longs[j]``."""
    if least < 2 * _PIECE:  # (a two-word key then has a part of _PIECE letters)
        raise ValueError(f"keys shorter than {2 * _PIECE} characters are not indexed")
    words_of = [set(long.split(" ")) for long in longs]
    frequency: Counter[str] = Counter(w for words in words_of for w in words)
    whole: dict[str, list[int]] = {}
    starts: dict[str, list[int]] = {}
    ends: dict[str, list[int]] = {}
    inside: dict[str, list[int]] = {}
    for i, short in enumerate(shorts):
        if len(short) < least:
            continue
        words = short.split(" ")
        if len(words) >= 3:
            anchor = min(words[1:-1], key=lambda w: frequency.get(w, 0))
            if frequency.get(anchor):  # (else no long key has that word: in none)
                whole.setdefault(anchor, []).append(i)
        elif len(words) == 2:
            first, second = words
            if len(second) >= _PIECE:
                starts.setdefault(second[:_PIECE], []).append(i)
            else:
                ends.setdefault(first[-_PIECE:], []).append(i)
        else:
            inside.setdefault(short[:_PIECE], []).append(i)
    found: set[tuple[int, int]] = set()
    for j, words in enumerate(words_of):
        candidates: set[int] = set()
        for w in words:
            candidates.update(whole.get(w, ()))
            if len(w) >= _PIECE:
                candidates.update(starts.get(w[:_PIECE], ()))
                candidates.update(ends.get(w[-_PIECE:], ()))
            if inside and len(w) >= least:
                for at in range(len(w) - least + 1):
                    candidates.update(inside.get(w[at : at + _PIECE], ()))
        long = longs[j]
        found.update((i, j) for i in candidates if shorts[i] in long)
    return found
