"""Finding and reading sources: what a folder contributes, and which files decode."""

import asyncio
import os

import pytest

from compiler import Compiler
from compiler.discover import Candidate, discover
from compiler.sources import decode_text, read_source
from kb_ai.errors import SourceError
from wiki import git, list_articles, read_article


def compile_paths(kb, settings, llm, *paths):
    compiler = Compiler(kb, settings, llm_factory=lambda s, **k: llm)
    return asyncio.run(compiler.compile_paths([str(p) for p in paths]))


SECRET_LINE = "root-secret-line: the-kept-outside-content"


@pytest.fixture
def outside(tmp_path):
    """A text file outside the folder being compiled."""
    d = tmp_path / "elsewhere"
    d.mkdir()
    f = d / "private.md"
    f.write_text(f"# Private\n\n{SECRET_LINE}\n", encoding="utf-8")
    return f


def test_a_link_out_of_the_folder_is_not_followed_and_is_reported(
    kb, settings, fake_llm, notes, outside
):
    (notes / "real.md").write_text("# Real\n\nThe real note says a fact.\n", encoding="utf-8")
    os.symlink(outside, notes / "x.md")
    os.symlink(outside.parent, notes / "subdir")  # a linked folder is not entered either

    result = compile_paths(kb, settings, fake_llm, notes)

    assert result.compiled == [str((notes / "real.md").resolve())]
    [failure] = result.failed
    assert failure.source.endswith("x.md")
    assert "outside" in failure.error and "name the file itself" in failure.error
    # nothing of the linked file reached the model, raw/ or the commit
    assert all("the-kept-outside-content" not in str(c.messages) for c in fake_llm.calls)
    assert "the-kept-outside-content" not in git(kb, "log", "-p", "--format=")
    assert git(kb, "status", "--porcelain").strip() == ""


def test_a_link_that_stays_inside_the_folder_is_compiled_once(kb, settings, fake_llm, notes):
    real = notes / "real.md"
    real.write_text("# Real\n\nThe real note says a fact.\n", encoding="utf-8")
    os.symlink(real, notes / "alias.md")
    os.symlink(notes / "b.md", notes / "a.md")  # a loop, and a link to nothing:
    os.symlink(notes / "a.md", notes / "b.md")  # neither is a file, as before
    os.symlink(notes / "gone.md", notes / "broken.md")
    candidates, problems = discover([notes])
    assert problems == [] and [c.origin for c in candidates] == [str(real.resolve())]


def test_a_link_named_on_the_command_line_is_the_users_choice(
    kb, settings, fake_llm, notes, outside
):
    link = notes / "x.md"
    os.symlink(outside, link)
    result = compile_paths(kb, settings, fake_llm, link)
    assert result.compiled == [str(outside.resolve())] and not result.failed
    [path] = list_articles(kb)
    assert read_article(kb, path).title


UTF16_TEXT = "# Réunion\n\nLe café ouvre à 8 h; la décision est prise.\n"


@pytest.mark.parametrize(
    "data",
    [
        UTF16_TEXT.encode("utf-16"),  # with a byte order mark (what Windows tools write)
        b"\xfe\xff" + UTF16_TEXT.encode("utf-16-be"),
        UTF16_TEXT.encode("utf-16-le"),  # no mark: recognised by its NUL bytes
        UTF16_TEXT.replace("\n", "\r\n").encode("utf-16-be"),
    ],
    ids=["bom-le", "bom-be", "bare-le", "bare-be-crlf"],
)
def test_utf16_files_are_decoded_not_refused_as_binary(data):
    assert decode_text(data, "notes.txt") == UTF16_TEXT


def test_binary_with_nul_bytes_is_still_refused():
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00" + bytes(range(256)) * 4
    with pytest.raises(SourceError, match="binary"):
        decode_text(png, "image.md")


def test_a_utf16_note_in_a_folder_compiles(kb, settings, fake_llm, notes, tmp_path):
    f = notes / "meeting.txt"
    f.write_bytes(UTF16_TEXT.encode("utf-16"))
    source = read_source(Candidate(f, str(f)), max_bytes=10_000, chunk_chars=4000)
    assert source.title == "Réunion" and "décision" in source.text

    result = compile_paths(kb, settings, fake_llm, notes)
    assert result.compiled == [str(f.resolve())] and not result.failed
    raw = (kb.root / "raw" / "reunion.md").read_text(encoding="utf-8")
    assert "Le café ouvre à 8 h" in raw
