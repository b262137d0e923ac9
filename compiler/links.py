"""Links between compiled articles: the first mention of another article becomes a wikilink.

The model writes an article without knowing which of its words are other articles'
titles, so a compiled wiki had almost no links, and ask's link hop (follow what the pages
read point at) had nothing to follow. After the model writes and the checks pass, kb-ai
itself turns the first plain mention of each other article's title into
``[[slug|mention]]``: deterministic, the same for the same text and catalog, and never
inside code, headings, existing links or URLs. The text the reader sees is unchanged.

Titles are matched whole, ignoring case and the spaces or hyphens between words
("Release Process" meets "release process" and "release-process"); a title of fewer
than four characters, or made only of digits or stop words, is not linked (too many
false hits). CJK titles (two characters or more) are matched as they are written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from wiki.words import CJK_RUN, STOP_WORDS, WORD, words

__all__ = ["LinkTargets", "link_mentions"]

MAX_LINKS = 20  # per article: a page of links reads worse than a page of text
_MAX_WORDS = 8  # the longest title, in words, that is looked for
_MAX_CJK = 12  # the longest CJK title, in characters
_JOINER = re.compile(r"[ \t\-]+")
# What is never rewritten: code spans, links of either kind, bare URLs, HTML tags.
_PROTECTED = re.compile(
    r"`[^`\n]*`|\[\[[^\]\n]*\]\]|!?\[[^\]\n]*\]\([^)\n]*\)|<[^>\n]*>|https?://\S+", re.I
)
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class LinkTargets:
    """The articles a body may link to: normalised title -> (path, link target)."""

    by_key: Mapping[str, tuple[str, str]]
    longest_cjk: int = 0
    first_words: frozenset[str] = frozenset()  # a title can only start at one of these
    # (what :meth:`extended` needs: how many articles have each slug, and the titles of
    # by_key by the slug of their article)
    slug_count: Mapping[str, int] = field(default_factory=dict, repr=False, compare=False)
    keys_by_slug: Mapping[str, tuple[str, ...]] = field(
        default_factory=dict, repr=False, compare=False
    )

    @classmethod
    def of(cls, articles: Iterable[tuple[str, str]]) -> LinkTargets:
        """From (path, title) pairs; the first article of a title wins."""
        return _NONE.extended(articles)

    def extended(self, articles: Iterable[tuple[str, str]]) -> LinkTargets:
        """These targets and those of more (path, title) pairs, listed after the ones
        they were made of: ``of(a).extended(b) == of(a + b)``. A wiki's catalog is made
        into targets while the model works (10,000 titles: ~45 ms), and a run adds its
        own articles to them at the stage barrier."""
        pairs = list(articles)
        counts = dict(self.slug_count)
        for path, _ in pairs:
            slug = _slug(path)
            counts[slug] = counts.get(slug, 0) + 1
        by_key = dict(self.by_key)
        keys_by_slug = dict(self.keys_by_slug)
        # a slug shared now: the link names the whole path of those articles
        for slug in {_slug(path) for path, _ in pairs} & keys_by_slug.keys():
            for key in keys_by_slug[slug]:
                path = by_key[key][0]
                by_key[key] = (path, slug if counts[slug] == 1 else path)
        longest = self.longest_cjk
        firsts = set(self.first_words)
        for path, title in pairs:
            key = _key(title)
            if not _linkable(key):
                continue
            cjk = CJK_RUN.fullmatch(key) is not None
            if cjk:
                longest = max(longest, min(len(key), _MAX_CJK))
            if key in by_key:
                continue
            slug = _slug(path)
            by_key[key] = (path, slug if counts[slug] == 1 else path)
            keys_by_slug[slug] = (*keys_by_slug.get(slug, ()), key)
            if not cjk:
                firsts.add(key.split(" ", 1)[0])
        return LinkTargets(by_key, longest, frozenset(firsts), counts, keys_by_slug)


_NONE = LinkTargets({})


def link_mentions(body: str, targets: LinkTargets, self_path: str, limit: int = MAX_LINKS) -> str:
    """``body`` with the first mention of each other article turned into a wikilink."""
    if not targets.by_key:
        return body
    linked: set[str] = {self_path}
    already = {m.group(1).split("|")[0].strip() for m in re.finditer(r"\[\[([^\]\n]+)\]\]", body)}
    linked |= {path for path, target in targets.by_key.values() if target in already}
    out: list[str] = []
    in_fence = False
    for line in body.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
            out.append(line)
            continue
        if in_fence or line.lstrip().startswith("#") or len(linked) - 1 >= limit:
            out.append(line)
            continue
        out.append(_link_line(line, targets, linked, limit))
    return "\n".join(out)


def _link_line(line: str, targets: LinkTargets, linked: set[str], limit: int) -> str:
    pieces: list[str] = []
    position = 0
    for match in _PROTECTED.finditer(line):
        pieces.append(_link_text(line[position : match.start()], targets, linked, limit))
        pieces.append(match.group())
        position = match.end()
    pieces.append(_link_text(line[position:], targets, linked, limit))
    return "".join(pieces)


def _link_text(text: str, targets: LinkTargets, linked: set[str], limit: int) -> str:
    spans: list[tuple[int, int, str]] = []  # (start, end, link target), in order
    words = list(WORD.finditer(text))
    # Read once per text, not once per candidate length: each word's key form and
    # whether the gap after it joins it to the next (re-joining up to 8 spans at every
    # title's first word took twice the time: 53.6 against 26.4 ms for the 38 decision
    # records' bodies).
    keys: list[str | None] = [None] * len(words)
    joins = [
        _JOINER.fullmatch(text, words[j].end(), words[j + 1].start()) is not None
        for j in range(len(words) - 1)
    ]
    i = 0
    while i < len(words):
        found = None
        starts = words[i].group().casefold() in targets.first_words
        longest = min(_MAX_WORDS, len(words) - i) if starts else 0
        for j in range(i, i + longest - 1):  # (a title spans joined words only)
            if not joins[j]:
                longest = j - i + 1
                break
        for j in range(i, i + longest):
            if keys[j] is None:
                keys[j] = _key(words[j].group())
        for n in range(longest, 0, -1):
            hit = targets.by_key.get(" ".join(keys[i : i + n]))  # type: ignore[arg-type]
            if hit is not None and hit[0] not in linked:
                found = (words[i].start(), words[i + n - 1].end(), hit, n)
                break
        if found is None:
            found = _cjk_hit(words[i], targets, linked)
            if found is None:
                i += 1
                continue
        start, end, (path, target), n = found
        spans.append((start, end, target))
        linked.add(path)
        if len(linked) - 1 >= limit:
            break
        i += n
    for start, end, target in reversed(spans):
        mention = text[start:end]
        text = f"{text[:start]}[[{target}|{mention}]]{text[end:]}"
    return text


def _cjk_hit(word: re.Match[str], targets: LinkTargets, linked: set[str]):
    """The longest CJK title inside ``word``, as a (start, end, hit, 1) span, or None."""
    if not targets.longest_cjk or not CJK_RUN.search(word.group()):
        return None
    text = word.group()
    for start in range(len(text)):
        for size in range(min(targets.longest_cjk, len(text) - start), 1, -1):
            hit = targets.by_key.get(text[start : start + size])
            if hit is not None and hit[0] not in linked:
                return (word.start() + start, word.start() + start + size, hit, 1)
    return None


def _key(title: str) -> str:
    return " ".join(words(title.casefold()))


def _linkable(key: str) -> bool:
    if not key:
        return False
    if CJK_RUN.fullmatch(key):
        return len(key) >= 2
    words = key.split()
    if all(w in STOP_WORDS or w.isdigit() for w in words):
        return False
    return len(key) >= 4 and len(words) <= _MAX_WORDS


def _slug(path: str) -> str:
    return path.rsplit("/", 1)[-1].removesuffix(".md")
