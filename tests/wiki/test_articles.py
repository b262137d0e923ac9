import pytest

from kb_ai.errors import KbAiError, NotFoundError, PathEscapeError, UsageError
from wiki import (
    Article,
    article_body_text,
    build_catalog,
    delete_article,
    derive_keys,
    list_articles,
    one_line,
    read_article,
    write_article,
)

BODY = """# Release checklist

Which services ship in which release.

| Service | Owner | Since |
|---------|:-----:|------:|
| **billing-api** | ann | 1.10 |
| `auth` | bo | 2.0 |
| [search](../topic/search.md) | cy | 2.1 |
| billing-api | dup | 3.0 |

```
| not | a |
|-----|---|
| table | here |
```
"""


def _article(**changes):
    fields = dict(
        path="wiki/process/release-checklist.md",
        title="no",
        type="process",
        summary="Version 1.10: what ships when.",
        tags=["release", "yes"],
        sources=["raw/standup.md", "raw/plan.md"],
        created="2024-05-02",
        updated="2024-05-03",
        body=BODY,
        keys=["1.10", "null"],
    )
    return Article(**(fields | changes))


def test_round_trip_keeps_every_field_and_yaml_pitfalls_stay_strings(kb):
    article = _article()

    write_article(kb, article)
    back = read_article(kb, article.path)

    assert back == article
    assert (back.title, back.keys[0], back.created) == ("no", "1.10", "2024-05-02")
    text = (kb.root / article.path).read_text()
    keys = [line.split(":")[0] for line in text.split("---\n")[1].splitlines() if ":" in line]
    assert keys == ["title", "type", "summary", "tags", "keys", "sources", "created", "updated"]
    assert "created: '2024-05-02'" in text


def test_keys_are_left_out_when_there_are_none(kb):
    write_article(kb, _article(keys=[]))

    assert "keys:" not in (kb.root / "wiki/process/release-checklist.md").read_text()


def test_summary_is_cut_to_200_characters_on_one_line(kb):
    written = write_article(kb, _article(summary="word\n" * 100))

    back = read_article(kb, written.path)
    assert back.summary == written.summary
    assert len(back.summary) <= 200 and "\n" not in back.summary
    assert back.summary.endswith("…")


def test_a_hand_edited_article_gets_defaults_and_dates_stay_iso_strings(kb):
    path = kb.wiki_dir / "topic" / "hand.md"
    path.parent.mkdir()
    path.write_text("---\ntitle: Hand\nupdated: 2024-06-01\ntags: a, b\n---\nBody\n")

    article = read_article(kb, "wiki/topic/hand.md")

    assert article == Article(
        path="wiki/topic/hand.md",
        title="Hand",
        type="topic",
        summary="",
        tags=["a", "b"],
        sources=[],
        created="",
        updated="2024-06-01",
        body="Body\n",
        keys=[],
    )


def test_malformed_yaml_names_the_file(kb):
    path = kb.wiki_dir / "topic" / "bad.md"
    path.parent.mkdir()
    path.write_text("---\ntitle: [unclosed\n---\nBody\n")

    with pytest.raises(KbAiError, match="wiki/topic/bad.md"):
        read_article(kb, "wiki/topic/bad.md")


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("wiki/../raw/x.md", PathEscapeError),
        ("raw/x.md", PathEscapeError),
        ("wiki/x.md", UsageError),
        ("wiki/process/deep/x.md", UsageError),
        ("wiki/process/x.txt", UsageError),
        ("wiki/process/Bad Name.md", UsageError),
        ("wiki/other/x.md", UsageError),  # type says process
    ],
)
def test_write_article_refuses_paths_that_are_not_wiki_type_slug(kb, path, error):
    with pytest.raises(error):
        write_article(kb, _article(path=path))
    assert list_articles(kb) == []


def test_list_delete_and_body(kb):
    write_article(kb, _article())
    write_article(kb, _article(path="wiki/decision/a.md", type="decision"))

    assert list_articles(kb) == ["wiki/decision/a.md", "wiki/process/release-checklist.md"]
    assert article_body_text(kb, "wiki/decision/a.md") == BODY
    assert delete_article(kb, "wiki/decision/a.md") is True
    assert delete_article(kb, "wiki/decision/a.md") is False
    assert list_articles(kb) == ["wiki/process/release-checklist.md"]
    with pytest.raises(NotFoundError):
        read_article(kb, "wiki/decision/a.md")


def test_derive_keys_takes_first_cells_of_table_rows():
    assert derive_keys(BODY) == ["billing-api", "auth", "search"]
    assert derive_keys(BODY, limit=2) == ["billing-api", "auth"]
    assert derive_keys("No tables here.\n\n---\n\nA | B\n") == []
    loose = "Key | Value\n--- | ---\n*alpha* | 1\nbeta \\| gamma | 2\n\nafter | table\n"
    assert derive_keys(loose) == ["alpha", "beta | gamma"]


def test_the_fast_header_reader_agrees_with_yaml_or_leaves_it_to_yaml():
    """Headers kb-ai writes skip the YAML loader; every header reads as YAML reads it."""
    import yaml

    from wiki._frontmatter import _simple_header, _StringLoader, dump_document

    metas = [
        {"title": "Cache: Redis", "tags": ["a", "b c"], "sources": [], "summary": "It's 30%."},
        {"title": "no", "type": "1.10", "created": "2026-11-29", "keys": ["x, y", "#1", "- z"]},
        {"title": "'quoted'", "summary": "a #b", "tags": ["ü", "数据库"], "sources": ["raw/a.md"]},
        {"title": "tab\there", "summary": "trailing ", "updated": ""},
    ]
    headers = [dump_document(m, "").split("---\n")[1] for m in metas]
    headers += [
        "title: x\ntags:\nsources: []\n",
        "title: x\n  nested: y\n",
        "title: x # comment\n",
        'title: "double"\n',
        "title: x\ntitle: y\n",
        "tags:\n  - a\n  - 'b'\n",
        "title: x\r\n",
    ]
    fast = 0
    for header in headers:
        got = _simple_header(header)
        try:
            expected = yaml.load(header, Loader=_StringLoader)  # noqa: S506
        except yaml.YAMLError:
            assert got is None, header  # what YAML refuses is left to YAML to refuse
            continue
        if got is not None:
            fast += 1
            assert got == expected, header
    assert fast >= 5  # what kb-ai writes takes the fast path


def test_links_in_wiki_are_never_listed_nor_read_and_unreadable_articles_are_skipped(
    kb, tmp_path, caplog
):
    write_article(kb, _article())
    outside = tmp_path / "passwd.md"
    outside.write_text("---\ntitle: Outside\n---\n\nroot:x:0:0\n")
    (kb.root / "wiki" / "process" / "leak.md").symlink_to(outside)
    (kb.root / "wiki" / "linked").symlink_to(tmp_path)
    (kb.root / "wiki" / "process" / "broken.md").write_bytes(b"---\ntitle: [x\n---\n\xff")
    assert list_articles(kb) == ["wiki/process/broken.md", "wiki/process/release-checklist.md"]
    assert [e.path for e in build_catalog(kb)] == ["wiki/process/release-checklist.md"]
    warnings = " ".join(r.getMessage() for r in caplog.records if r.levelname == "WARNING")
    assert "wiki/process/leak.md: it is a symbolic link" in warnings
    assert "wiki/linked: it is a symbolic link" in warnings
    assert "wiki/process/broken.md: it cannot be read" in warnings


def test_one_line_drops_controls_and_bidi_overrides():
    assert one_line("Invoice\u202egnp.exe\x00 \t\n  due\u2066!\u2069") == "Invoicegnp.exe due!"
