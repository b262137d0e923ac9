import pytest

from wiki import slugify, unique_slug


@pytest.mark.parametrize(
    ("title", "slug"),
    [
        ("Deploying to Production", "deploying-to-production"),
        ("Café Münster — Straße", "cafe-munster-straße"),
        ("Ångström & Œuvre", "angstrom-œuvre"),
        ("数据库迁移指南", "数据库迁移指南"),
        ("会议记录 2024/05", "会议记录-2024-05"),
        ("がぎぐ", "がぎぐ"),
        ("Ｆｕｌｌ Ｗｉｄｔｈ", "full-width"),
        ("v1.10 ../etc/passwd", "v1-10-etc-passwd"),
        ("...", "untitled"),
        ("", "untitled"),
    ],
)
def test_slugify(title, slug):
    assert slugify(title) == slug


def test_slugify_cuts_long_titles_without_a_trailing_hyphen():
    slug = slugify("word " * 40, max_len=12)
    assert slug == "word-word-wo"
    assert len(slugify("词" * 100)) == 60


def test_unique_slug_counts_up():
    assert unique_slug("a", set()) == "a"
    assert unique_slug("a", {"a"}) == "a-2"
    assert unique_slug("a", {"a", "a-2", "a-3"}) == "a-4"


@pytest.mark.parametrize(
    ("path", "slug"),
    [("wiki/decision/use-redis.md", "use-redis"), ("raw/notes.tar.gz", "notes.tar"),
     ("wiki/x/", "x"), ("wiki/./a.md", "a"), ("a//b.md", "b"), ("wiki/.hidden", ".hidden"),
     ("log", "log"), ("", ""), ("..", "..")],
)  # fmt: skip
def test_the_slug_of_a_path_is_its_file_name_without_the_suffix(path, slug):
    """What the catalog's lookups by slug compare: the file name without its last
    suffix, as pathlib's stem (which, from Python 3.14, also drops a lone trailing dot)."""
    from pathlib import PurePosixPath

    from wiki import slug_of

    assert slug_of(path) == slug == PurePosixPath(path).stem
