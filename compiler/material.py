"""The writer's material, fitted to a budget of characters. A 5 MB source merges into
more material than any prompt holds (max_prompt_chars), and the write call would fail
whole; past the budget the writer gets the items most relevant to its article first
(the words of its title and summary), in their original order, and each source's
summary always. What is left out stays in the source's extraction and is said in the
run's log; an enumeration is kept whole or not at all (its completeness is its point)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from wiki.words import fold, query_terms, words


@dataclass(frozen=True)
class Material:
    """What one source gives the article it feeds."""

    source: str  # raw/<slug>.md
    text: str  # the extraction as Markdown
    revised: bool = False
    previous: str | None = None  # the earlier extraction of a revised source
    date: str = ""  # when its facts held (compiler/dating.py)
    dated: bool = False  # the date is the source's own, not the day it was added
    # a person's lines (``source`` "edit:<commit>"): who wrote them, "a1b2c3d by Ann"
    cite: str = ""

    @property
    def by_hand(self) -> bool:
        return self.source.startswith(HAND_EDIT)


#: The source of a person's lines in an article, as material: "edit:<commit>".
HAND_EDIT = "edit:"


_ITEM = re.compile(r"^(?:- |\s+\d+\. )")


@dataclass
class _Block:
    """A heading line of the material ("Facts:") and its items, or a line of its own."""

    source: int  # index of the material it belongs to
    order: int
    head: str
    items: list[str]
    whole: bool  # kept whole or not at all: a summary, an enumeration


def fit_material(
    material: list[Material], budget: int, subject: str
) -> tuple[list[Material], str | None]:
    """``material`` within ``budget`` characters of text (all of it when it fits), and a
    note saying what was left out (None when nothing was)."""
    total = sum(len(m.text) for m in material)
    if total <= budget or budget <= 0:
        return material, None
    blocks = [b for i, m in enumerate(material) for b in _blocks(i, m.text)]
    terms = [(t.text, t.prefix) for t in query_terms(subject)]
    units: list[tuple[float, int, int, int]] = []  # (-score, order, block, item or -1)
    for b_index, block in enumerate(blocks):
        if block.whole:
            score = 1e9 if block.head.startswith("Summary:") else _score(block.items, terms) + 0.5
            units.append((-score, block.order, b_index, -1))
            continue
        for i_index, item in enumerate(block.items):
            units.append((-_score([item], terms), block.order, b_index, i_index))
    units.sort()
    kept: dict[int, set[int]] = {}
    used, dropped_items = 0, 0
    for _, _, b_index, i_index in units:
        block = blocks[b_index]
        if i_index < 0:
            size = len(block.head) + sum(len(x) + 1 for x in block.items) + 1
        else:
            size = len(block.items[i_index]) + 1 + (0 if b_index in kept else len(block.head) + 1)
        if used + size > budget:
            dropped_items += (len(block.items) or 1) if i_index < 0 else 1
            continue
        used += size
        kept.setdefault(b_index, set())
        if i_index < 0:
            kept[b_index].update(range(len(block.items)))
        else:
            kept[b_index].add(i_index)
    out = []
    for index, m in enumerate(material):
        lines: list[str] = []
        for b_index, block in enumerate(blocks):
            if block.source != index or b_index not in kept:
                continue
            lines.append(block.head)
            lines += [x for i, x in enumerate(block.items) if i in kept[b_index]]
        out.append(replace(m, text="\n".join(lines)))
    note = (
        f"material cut to {used:,} of {total:,} characters for the write prompt: "
        f"{dropped_items:,} item(s) least related to the title left out (they stay in the "
        "extraction; raise write_material_chars or max_prompt_chars to give the writer more)"
    )
    return out, note


def _blocks(source: int, text: str) -> list[_Block]:
    blocks: list[_Block] = []
    for line in text.split("\n"):
        if _ITEM.match(line) and blocks and not blocks[-1].head.startswith("Summary:"):
            blocks[-1].items.append(line)
            continue
        whole = line.startswith(("Summary:", "Complete list"))
        blocks.append(_Block(source, len(blocks), line, [], whole))
    return blocks


def _score(lines: list[str], terms: list[tuple[str, bool]]) -> float:
    """How many of the subject's terms ``lines`` contain (a prefix term: a word starting
    with it)."""
    found = set(words(fold(" ".join(lines)).casefold()))
    hits = 0
    for text, prefix in terms:
        if text in found or (prefix and any(w.startswith(text) for w in found)):
            hits += 1
    return float(hits)
