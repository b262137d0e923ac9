"""Two servers compiling at the same time into one wiki remote: both runs start from the
same remote commit, so the one that pushes second is refused (a non-fast-forward),
rebases its commit onto the winner's (merging the indexes and log.md that both rewrote)
and wins on retry; neither article is lost. Real bare repository, real compiles through
the application layer, a stand-in model slow enough that the two runs overlap."""

import asyncio

from kb_ai.service import Actor, open_kb
from kb_ai.service.compiling import compile_paths
from kb_ai.service.remote import init_from_remote
from kb_ai.settings import load_settings
from tests.fakes.fake_llm import FakeLLM
from tests.remotes import bare, remote_file, remote_log, remote_paths
from tests.web.conftest import respond
from wiki import git
from wiki.remote import sync


def opened(root):
    settings = load_settings(root, {"model": "fake/model"}, environ={})
    slow = lambda settings, **kw: FakeLLM(respond, delay=0.5)  # noqa: E731
    return open_kb(settings=settings, actor=Actor.worker(), llm_factory=slow)


def note(tmp_path, name, text):
    folder = tmp_path / f"notes-{name}"
    folder.mkdir()
    (folder / f"{name}.md").write_text(text, encoding="utf-8")
    return folder


def test_two_compiles_race_one_rebases_and_both_articles_reach_the_remote(tmp_path):
    remote = bare(tmp_path / "wiki.git")
    one = init_from_remote(tmp_path / "one", str(remote)).kb
    two = init_from_remote(tmp_path / "two", str(remote)).kb
    backups = note(tmp_path, "backups", "# Nightly backups\n\nBackups run at 02:00.\n")
    alerts = note(tmp_path, "alerts", "# Pager alerts\n\nAlerts page the on-call engineer.\n")

    async def both():
        return await asyncio.gather(
            compile_paths(opened(one.root), [backups]), compile_paths(opened(two.root), [alerts])
        )

    first, second = asyncio.run(both())

    assert first.commit and second.commit
    rebased = [kb for kb in (one, two) if "rebase" in git(kb, "reflog", "-n", "20")]
    assert len(rebased) == 1  # they raced: the second to push rebased onto the first
    on_remote = remote_paths(remote, "wiki")
    assert set(first.created) | set(second.created) <= set(on_remote)
    index = remote_file(remote, "index/master-index.md")
    assert all(p in index for p in first.created + second.created)
    assert "2 articles." in index
    log = remote_file(remote, "log.md")
    assert "<<<<<<<" not in log and log.count("\n## ") >= 2
    assert remote_log(remote)[2:] == ["Create the kb-ai knowledge base"]
    # both work trees end on the remote's commit (the winner takes the other's in next)
    for kb in (one, two):
        assert sync(kb).state.error is None
    assert git(one, "rev-parse", "HEAD") == git(two, "rev-parse", "HEAD")
    assert git(one, "rev-parse", "HEAD") == git(one, "rev-parse", "kb-ai/main")
