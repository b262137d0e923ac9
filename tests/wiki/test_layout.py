import subprocess

import pytest

from kb_ai.errors import NotAKnowledgeBaseError, PathEscapeError, UsageError
from wiki import KnowledgeBase, git


def test_init_creates_the_layout_and_a_first_commit_without_a_git_identity(tmp_path):
    kb = KnowledgeBase.init(tmp_path / "kb")

    for d in (kb.raw_dir, kb.extraction_dir, kb.wiki_dir, kb.index_dir, kb.state_dir):
        assert d.is_dir()
    assert kb.config_path.read_text().startswith("#")
    assert ".kb-ai/" in (kb.root / ".gitignore").read_text().splitlines()
    assert git(kb, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    log = git(kb, "log", "--format=%an <%ae>|%s").strip().splitlines()
    assert log == ["kb-ai <kb-ai@localhost>|Create the kb-ai knowledge base"]
    committed = git(kb, "ls-files").split()
    assert {"kb-ai.toml", ".gitignore", "log.md"} <= set(committed)
    assert git(kb, "status", "--porcelain") == ""


def test_init_twice_is_fine_and_adds_no_commit(tmp_path):
    kb = KnowledgeBase.init(tmp_path / "kb")
    (kb.wiki_dir / "t").mkdir()
    (kb.wiki_dir / "t" / "a.md").write_text("hand-written\n")

    again = KnowledgeBase.init(tmp_path / "kb")

    assert again == kb
    assert len(git(kb, "log", "--format=%h").split()) == 1
    assert (kb.wiki_dir / "t" / "a.md").read_text() == "hand-written\n"


def test_init_accepts_a_directory_with_only_a_git_repository(tmp_path):
    root = tmp_path / "kb"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)

    kb = KnowledgeBase.init(root)

    assert git(kb, "log", "--format=%s").strip() == "Create the kb-ai knowledge base"


def test_init_refuses_a_non_empty_directory_that_is_not_a_knowledge_base(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")

    with pytest.raises(UsageError) as info:
        KnowledgeBase.init(tmp_path)

    assert "notes.txt" in info.value.message and info.value.hint
    assert not (tmp_path / "kb-ai.toml").exists()


def test_open_on_a_directory_that_is_not_a_knowledge_base_says_what_to_do(tmp_path):
    with pytest.raises(NotAKnowledgeBaseError) as info:
        KnowledgeBase.open(tmp_path)

    assert str(tmp_path) in info.value.message and "no kb-ai.toml" in info.value.message
    assert "kb-ai init" in info.value.hint and "--kb" in info.value.hint


def test_open_finds_an_initialised_knowledge_base(kb):
    assert KnowledgeBase.open(kb.root) == kb
    assert kb.state_db == kb.root / ".kb-ai" / "state.db"
    assert kb.master_index_path == kb.root / "index" / "master-index.md"
    assert kb.topics_path == kb.root / "index" / "topics.md"
    assert kb.log_path == kb.root / "log.md"


@pytest.mark.parametrize(
    ("rel", "under"),
    [
        ("../x", "wiki"),
        ("../x", ""),
        ("wiki/../raw/x.md", "wiki"),
        ("wiki/../../x.md", ""),
        ("raw/x.md", "wiki"),
        ("/etc/passwd", "wiki"),
        ("/etc/passwd", ""),
        ("C:\\Windows\\x.md", ""),
        ("wiki\\..\\..\\x.md", ""),
        ("", "wiki"),
    ],
)
def test_resolve_refuses_paths_that_leave_their_part(kb, rel, under):
    with pytest.raises(PathEscapeError):
        kb.resolve(rel, under=under)


def test_resolve_refuses_a_symlink_pointing_outside(kb, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret")
    (kb.wiki_dir / "t").symlink_to(outside)

    with pytest.raises(PathEscapeError):
        kb.resolve("wiki/t/secret.md")


def test_resolve_looks_through_every_part_below_the_root(kb, tmp_path):
    """A symlinked article file leading out is refused like a symlinked folder; one
    leading to another place inside its part is followed; a path not there yet is fine."""
    outside = tmp_path / "secret.md"
    outside.write_text("secret")
    (kb.wiki_dir / "t").mkdir()
    (kb.wiki_dir / "t" / "out.md").symlink_to(outside)
    (kb.wiki_dir / "u").mkdir()
    (kb.wiki_dir / "u" / "real.md").write_text("inside")
    (kb.wiki_dir / "t" / "in.md").symlink_to(kb.wiki_dir / "u" / "real.md")
    (kb.raw_dir / "w").symlink_to(kb.wiki_dir)

    with pytest.raises(PathEscapeError):
        kb.resolve("wiki/t/out.md")
    with pytest.raises(PathEscapeError):  # inside the knowledge base, but not its part
        kb.resolve("raw/w/u/real.md", under="raw")
    assert kb.resolve("wiki/t/in.md") == kb.wiki_dir / "t" / "in.md"
    assert kb.resolve("wiki/new/a/b.md") == kb.wiki_dir / "new" / "a" / "b.md"


def test_resolve_and_relpath_agree_inside(kb):
    path = kb.resolve("wiki/topic/./a.md")
    assert path == kb.root / "wiki" / "topic" / "a.md"
    assert kb.relpath(path) == "wiki/topic/a.md"
    assert kb.resolve("raw/x.md", under="raw") == kb.raw_dir / "x.md"
    assert kb.resolve("log.md", under="") == kb.log_path
    with pytest.raises(PathEscapeError):
        kb.relpath(kb.root.parent / "elsewhere.md")


def test_init_again_leaves_the_users_uncommitted_edits_alone(kb):
    kb.config_path.write_text('model = "openai/gpt-4o-mini"\n')
    (kb.root / ".gitignore").write_text("*.tmp\n")

    KnowledgeBase.init(kb.root)

    assert git(kb, "log", "-1", "--format=%s").strip() == (
        "Add what the kb-ai knowledge base was missing"
    )
    assert git(kb, "show", "HEAD:.gitignore") == "*.tmp\n.kb-ai/\n"
    assert git(kb, "status", "--porcelain").strip() == "M kb-ai.toml"
    assert kb.config_path.read_text() == 'model = "openai/gpt-4o-mini"\n'


def test_init_inside_another_repository_makes_a_repository_of_its_own(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)

    kb = KnowledgeBase.init(tmp_path / "kb")

    assert git(kb, "rev-parse", "--show-toplevel").strip() == str(kb.root)
    assert git(kb, "log", "--format=%s").strip() == "Create the kb-ai knowledge base"
