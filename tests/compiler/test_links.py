"""Compiled articles link to each other: the first mention of another article's title."""

from __future__ import annotations

from compiler.links import LinkTargets, link_mentions
from retrieval.pages import Page, link_targets

ARTICLES = [
    ("wiki/concept/release-process.md", "Release Process"),
    ("wiki/entity/postgresql.md", "PostgreSQL"),
    ("wiki/entity/redis.md", "Redis"),
    ("wiki/concept/ttl.md", "TTL"),
    ("wiki/concept/the-who.md", "The Who"),
    ("wiki/entity/beijing.md", "北京"),
    ("wiki/howto/deploy.md", "Deploy"),
]
TARGETS = LinkTargets.of(ARTICLES)


def test_first_mention_of_each_title_becomes_a_wikilink() -> None:
    body = (
        "We moved sessions from Redis to PostgreSQL in March.\n\n"
        "Redis stays for the queue; see the release-process notes."
    )

    linked = link_mentions(body, TARGETS, "wiki/decision/sessions.md")

    assert linked == (
        "We moved sessions from [[redis|Redis]] to [[postgresql|PostgreSQL]] in March.\n\n"
        "Redis stays for the queue; see the [[release-process|release-process]] notes."
    )


def test_code_headings_links_and_own_title_are_left_alone() -> None:
    body = (
        "# Redis\n\n"
        "Run `redis-cli ping` or see [the docs](https://redis.io/docs).\n\n"
        "```\nPostgreSQL config\n```\n\n"
        "Already linked: [[postgresql]]. The Deploy page is this one."
    )

    linked = link_mentions(body, TARGETS, "wiki/howto/deploy.md")

    assert "# Redis" in linked
    assert "`redis-cli ping`" in linked
    assert "```\nPostgreSQL config\n```" in linked
    assert linked.count("[[postgresql") == 1
    assert "[[deploy" not in linked


def test_short_and_stop_word_titles_are_not_linked() -> None:
    body = "The TTL is 30 minutes. The who and the what."

    assert link_mentions(body, TARGETS, "wiki/x/y.md") == body


def test_chinese_titles_are_found_inside_a_run() -> None:
    linked = link_mentions("我们在北京开会。", TARGETS, "wiki/x/y.md")

    assert linked == "我们在[[beijing|北京]]开会。"


def test_the_links_written_are_what_the_ask_hop_follows() -> None:
    linked = link_mentions("Sessions moved to PostgreSQL.", TARGETS, "wiki/x/y.md")
    page = Page(path="wiki/x/y.md", title="Sessions", text=linked, cut=False)

    _, slugs = link_targets([page])

    assert slugs == ["postgresql"]


def test_same_text_and_catalog_give_the_same_links() -> None:
    body = "Redis, PostgreSQL and the Release Process, again Redis."
    shuffled = LinkTargets.of(list(reversed(ARTICLES)))

    assert link_mentions(body, TARGETS, "a") == link_mentions(body, shuffled, "a")


def test_the_longest_title_wins_and_never_across_punctuation() -> None:
    targets = LinkTargets.of(
        [
            ("wiki/concept/release.md", "Release"),
            ("wiki/concept/release-process.md", "Release Process"),
            ("wiki/concept/release-process-review.md", "Release Process Review"),
        ]
    )
    body = "The release process-review comes after the Release. Process notes: release, process."

    linked = link_mentions(body, targets, "wiki/decision/x.md")

    assert linked == (
        "The [[release-process-review|release process-review]] comes after the "
        "[[release|Release]]. Process notes: release, process."
    )


def _targets_in_one_pass(pairs: list[tuple[str, str]]) -> tuple[dict, int, frozenset]:
    """What the targets of ``pairs`` are, by their definition: every title normalised,
    the first article of a title wins, a link names the slug unless two articles share
    it (then the path)."""
    from compiler.links import _MAX_CJK, _key, _linkable, _slug
    from wiki.words import CJK_RUN

    slugs = [_slug(path) for path, _ in pairs]
    by_key: dict[str, tuple[str, str]] = {}
    longest = 0
    for (path, title), slug in zip(pairs, slugs, strict=True):
        key = _key(title)
        if _linkable(key):
            by_key.setdefault(key, (path, slug if slugs.count(slug) == 1 else path))
            if CJK_RUN.fullmatch(key):
                longest = max(longest, len(key))
    firsts = frozenset(k.split(" ", 1)[0] for k in by_key if not CJK_RUN.fullmatch(k))
    return by_key, min(longest, _MAX_CJK), firsts


def test_a_catalogs_targets_extended_with_a_runs_articles_are_those_of_both() -> None:
    """The catalog's targets are made while the model works, the run's articles added at
    the barrier: the same links as one pass over both, whichever articles share a slug
    or a title (an article the run updates is in both lists)."""
    import random

    titles = ["Release process", "Redis cache", "Release Process", "The", "部署流程",
              "数据库迁移与回滚方案总览说明文档", "On-call rotation", "x", "Deploy 2026"]  # fmt: skip
    rng = random.Random(2026)
    for _ in range(300):
        pairs = [
            (f"wiki/{rng.choice(['concept', 'howto', 'decision'])}/{rng.choice('abcde')}.md",
             rng.choice(titles))
            for _ in range(rng.randrange(0, 12))
        ]  # fmt: skip
        cut = rng.randrange(0, len(pairs) + 1)
        made = LinkTargets.of(pairs[:cut]).extended(pairs[cut:])
        by_key, longest, firsts = _targets_in_one_pass(pairs)
        assert dict(made.by_key) == by_key, pairs
        assert (made.longest_cjk, made.first_words) == (longest, firsts)
        assert LinkTargets.of(pairs) == made
