"""Hand edits last: where a compile writes an article, a person's change to it is merged
in, never overwritten.

Before the writer runs, :func:`look_at` finds the article's hand edit (wiki/hand_edits.py)
and gives the writer kb-ai's own last version instead of the file: the writer's new
version then differs from its last one only by what the material changed, and the
person's lines never pass through a model or its checks. When the new version is
stored, :func:`store_merged` merges the two changes three-way (``git merge-file``):

- they do not overlap: the merge is stored, the person's lines word for word, and kb-ai's
  own new version is kept under bases/ for the next merge;
- they overlap, or a number the person's lines state is one kb-ai's old version stated
  and its new one no longer does (the revised source now says otherwise): nothing is
  written; the article is :class:`Held` for review (compiler/review.py puts kb-ai's
  version on a review branch, the person's stays on main).

The same holds for small models, whose articles are their source's own text.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from compiler.material import HAND_EDIT, Material
from kb_ai.errors import KbAiError
from wiki import Article, KnowledgeBase, atomic_write_text, read_article
from wiki._frontmatter import load_document
from wiki.articles import article_from, article_text, normalise_article
from wiki.hand_edits import (
    EDIT_LOCK,
    HandEdit,
    base_path,
    blob_id,
    drop_base,
    find_hand_edit,
    keep_base,
    merge_texts,
)
from wiki.lock import KbLock

_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,:/-]\d+)*(?![\w])")


@dataclass(frozen=True)
class Look:
    """An article as the writer should see it, and what was on disk when it looked."""

    existing: Article | None  # kb-ai's own last version when a person changed the file
    hand: HandEdit | None
    text: str  # the file's text when looked at ("" when there was none)


@dataclass(frozen=True)
class Stored:
    """An article as stored; ``blob``: the id of its file when it is kb-ai's own text
    (None when it holds a merged hand edit)."""

    article: Article
    blob: str | None


@dataclass(frozen=True)
class Held:
    """An article kb-ai did not write because its new version meets a person's change."""

    path: str
    person: str  # the file as the person left it (stays on main)
    generated: str  # kb-ai's new version
    proposal: str  # the merge, kb-ai's side taken where they overlap
    reason: str
    by: str  # the person's commits: "a1b2c3d by Ann"
    deletes: bool = False  # kb-ai's new version is no article: its last source left


def hold_deletion(look: Look, path: str, left: str) -> Held | None:
    """The article at ``path`` held instead of deleted (its last source, ``left``, went)
    when it holds a person's lines; None when nothing of it is a person's."""
    hand = look.hand
    if hand is None or not person_lines(hand):
        return None
    reason = (
        f"its last source left ({left}), but it holds a person's lines: approve deletes it, "
        "reject keeps it with them"
    )
    return Held(path, hand.current, "", "", reason, hand.by(), deletes=True)


def look_at(kb: KnowledgeBase, path: str, known: str | None = None) -> Look:
    """The article at ``path`` for the writer: kb-ai's own last version of it when a
    person changed it since (see the module's docstring). ``known``: the blob id kb-ai
    last wrote there (wiki.hand_edits.load_versions)."""
    file = kb.resolve(path, under="wiki")
    if not file.is_file():
        return Look(None, None, "")
    text = file.read_text(encoding="utf-8")
    hand = find_hand_edit(kb, path, known)
    if hand is None:
        return Look(read_article(kb, path), None, text)
    existing = _parse(path, hand.base) if hand.base else None
    return Look(existing, hand, text)


def store_merged(
    kb: KnowledgeBase, article: Article, look: Look | None, notes: list[str]
) -> Stored | Held:
    """Store ``article`` (kb-ai's new version), merged with a person's change to the
    file; returns what was stored, or the :class:`Held` article when nothing was."""
    normal = normalise_article(kb, article)
    generated = article_text(normal)
    file = kb.resolve(normal.path, under="wiki")
    if look is None or (look.hand is None and not look.text):  # a new article
        atomic_write_text(file, generated)  # (as wiki.write_article would)
        return Stored(normal, blob_id(generated))
    with KbLock(kb.state_dir / EDIT_LOCK):  # an editor's save waits, or we wait for it
        now = file.read_text(encoding="utf-8") if file.is_file() else ""
        hand = look.hand if now == look.text else find_hand_edit(kb, normal.path)
        if hand is None:
            atomic_write_text(file, generated)
            drop_base(kb, normal.path)
            return Stored(normal, blob_id(generated))
        generated = _without_repeats(generated, hand)
        merge = merge_texts(kb, hand.base, hand.current, generated)
        reason = _overlap(merge.conflicts) or contradicted(hand, generated)
        merged = None
        if not reason:
            try:
                merged = _parse(normal.path, merge.text)
            except KbAiError as exc:
                reason = f"the merged frontmatter does not parse ({exc.message})"
        if merged is None:
            return Held(normal.path, hand.current, generated, merge.proposal, reason, hand.by())
        atomic_write_text(file, merge.text)
        if merge.text == generated:
            drop_base(kb, normal.path)
            return Stored(merged, blob_id(generated))
        keep_base(kb, normal.path, generated)
        notes.append(f"kept the hand edit ({hand.by()}) word for word: a three-way merge")
        return Stored(merged, None)


def _overlap(conflicts: int) -> str:
    if not conflicts:
        return ""
    return f"the hand edit and kb-ai's new version change the same lines ({conflicts} place(s))"


def contradicted(hand: HandEdit, generated: str) -> str:
    """Why kb-ai's new version contradicts a line the person wrote ("" when it does not):
    the line states a number kb-ai's last version stated and its new version no longer
    does, so the source it came from now says something else."""
    dropped = numbers_dropped(hand.base, generated)
    for line in person_lines(hand):
        gone = [n for n in _NUMBER.findall(line) if n in dropped]
        if gone:
            return (
                f"the revised source no longer states {gone[0]}, which the hand edit says: "
                f"{line.strip()[:200]!r}"
            )
    return ""


def numbers_dropped(base: str, new: str) -> set[str]:
    """The numbers kb-ai's last version stated that its new one no longer states: not
    anywhere, or not in the lines that replaced the lines stating them (a revised value:
    "15 minutes" became "20 minutes" while 15 is still said elsewhere)."""
    a, b = base.splitlines(), new.splitlines()
    out = set(_NUMBER.findall(base)) - set(_NUMBER.findall(new))
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "replace":
            was = set(_NUMBER.findall("\n".join(a[i1:i2])))
            out |= was - set(_NUMBER.findall("\n".join(b[j1:j2])))
    return out


def person_lines(hand: HandEdit) -> list[str]:
    """The lines the person added or changed (their text as the file has it)."""
    base, current = hand.base.splitlines(), hand.current.splitlines()
    out = []
    matcher = difflib.SequenceMatcher(a=base, b=current, autojunk=False)
    for op, _, _, j1, j2 in matcher.get_opcodes():
        if op in ("insert", "replace"):
            out += [line for line in current[j1:j2] if line.strip()]
    return out


def person_material(look: Look | None) -> Material | None:
    """A person's lines in the article, as material of its next version: grounded (the
    checks take what they state as stated), cited by the edit's commits and authors.
    None when the article holds no person's line. They stay in the file word for word
    through the merge; the writer is told not to repeat them (:func:`store_merged`
    drops a line of theirs it repeats anyway)."""
    hand = look.hand if look is not None else None
    if hand is None:
        return None
    header = set(_header_lines(hand.current))
    lines = [line for line in person_lines(hand) if line not in header]
    if not lines:
        return None
    newest = hand.edits[0] if hand.edits else None
    text = "\n".join(f"- {line.strip()}" for line in lines)
    return Material(
        source=HAND_EDIT + (newest.commit if newest else "uncommitted"),
        text=text,
        date=newest.date[:10] if newest else "",
        dated=newest is not None,
        cite=hand.by(),
    )


def _without_repeats(generated: str, hand: HandEdit) -> str:
    """kb-ai's new version without the lines it repeats of the person's own: the merge
    puts theirs where they wrote them, so none is said twice."""
    theirs = {line.strip() for line in person_lines(hand)}
    before = {line.strip() for line in hand.base.splitlines()}
    kept: list[str] = []
    lines = generated.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.strip() and line.strip() in theirs and line.strip() not in before:
            # its paragraph break goes with it: the one before, else the one after
            if kept and not kept[-1].strip():
                kept.pop()
            elif i + 1 < len(lines) and not lines[i + 1].strip():
                lines[i + 1] = ""
            continue
        if line:
            kept.append(line)
    return "".join(kept)


def _header_lines(text: str) -> list[str]:
    """The lines of ``text``'s frontmatter (a person's change there is not material)."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return []
    end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), 0)
    return lines[: end + 1]


def _parse(path: str, text: str) -> Article:
    return article_from(path, *load_document(text, path))


__all__ = [
    "EDIT_LOCK",
    "Held",
    "Look",
    "Stored",
    "base_path",
    "hold_deletion",
    "look_at",
    "person_material",
    "store_merged",
]
