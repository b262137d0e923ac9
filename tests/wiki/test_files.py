import os
import stat

import pytest

from wiki import atomic_write_text, sha256_bytes


def test_atomic_write_creates_parents_and_leaves_no_temp_files(tmp_path):
    target = tmp_path / "a" / "b" / "x.md"

    atomic_write_text(target, "one\n")
    atomic_write_text(target, "two — ✓\r\n")

    assert target.read_bytes() == "two — ✓\r\n".encode()
    assert os.listdir(target.parent) == ["x.md"]


def test_a_failed_write_leaves_the_original_intact(tmp_path, monkeypatch):
    target = tmp_path / "x.md"
    target.write_text("original\n")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_text(target, "new text that never lands\n")

    assert target.read_text() == "original\n"
    assert os.listdir(tmp_path) == ["x.md"]


def test_new_files_get_ordinary_permissions_and_replaced_ones_keep_theirs(tmp_path):
    target = tmp_path / "x.md"
    atomic_write_text(target, "a")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask

    target.chmod(0o640)
    atomic_write_text(target, "b")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_sha256_bytes():
    assert sha256_bytes(b"abc") == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )


def test_a_folder_removed_between_making_it_and_writing_into_it_is_made_again(
    tmp_path, monkeypatch
):
    """A compile writes articles in threads while another removes an emptied type
    folder (wiki.articles.delete_article): the write makes the folder again."""
    import wiki.files

    real_open = os.open
    removed = []

    def open_after_removal(path, *args):
        if not removed:  # the other thread's rmdir lands between mkdir and open
            os.rmdir(os.path.dirname(path))
            removed.append(path)
        return real_open(path, *args)

    monkeypatch.setattr(wiki.files.os, "open", open_after_removal)
    target = tmp_path / "wiki" / "concept" / "a.md"
    atomic_write_text(target, "kept\n")
    assert removed and target.read_text() == "kept\n"
    assert [p.name for p in target.parent.iterdir()] == ["a.md"]


def test_a_folder_removed_inside_mkdir_is_made_again(tmp_path, monkeypatch):
    """The same removal landing inside mkdir (after it found the folder there, before it
    checked that it is a folder) made mkdir raise FileExistsError: the run stopped."""
    target = tmp_path / "wiki" / "decision" / "a.md"
    target.parent.mkdir(parents=True)
    real_mkdir = os.mkdir
    removed = []

    def mkdir_racing_a_removal(path, *args, **kwargs):
        if not removed and os.fspath(path) == os.fspath(target.parent):
            removed.append(path)
            os.rmdir(path)  # the other thread's rmdir, after the folder was seen there
            raise FileExistsError(17, "File exists", os.fspath(path))
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir_racing_a_removal)
    atomic_write_text(target, "kept\n")
    assert removed and target.read_text() == "kept\n"
