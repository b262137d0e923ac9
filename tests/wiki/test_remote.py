"""The wiki of record in a git remote (wiki/remote.py), against real bare repositories:
two knowledge bases on one remote, a push race, a remote gone and back, one that refuses."""

import subprocess
from contextlib import closing
from datetime import UTC, datetime

from tests.remotes import bare, refuse_pushes, remote_file, remote_log
from wiki import KnowledgeBase, commit_all, git
from wiki.articles import Article, write_article
from wiki.catalog import build_catalog, write_indexes
from wiki.log import append_log
from wiki.remote import publish, read_state, set_remote, sync
from wiki.search import SearchIndex
from wiki.state import open_state


def clone_kb(remote, root):
    subprocess.run(["git", "clone", "-q", "--origin", "kb-ai", str(remote), str(root)], check=True)
    return KnowledgeBase.init(root)


def add_article(kb, slug, title, body, message):
    """An article written as a compile writes it: the article, the indexes, log.md, one
    commit."""
    write_article(
        kb,
        Article(path=f"wiki/topic/{slug}.md", title=title, type="topic",
                summary=f"{title}.", tags=["ops"], sources=[], created="2026-12-01",
                updated="2026-12-01", body=body),
    )  # fmt: skip
    write_indexes(kb, build_catalog(kb))
    append_log(kb, f"compile {slug}", [f"created wiki/topic/{slug}.md"])
    return commit_all(kb, message)


def test_a_commit_is_pushed_and_another_knowledge_base_takes_it_in(tmp_path):
    remote = bare(tmp_path / "wiki.git")
    writer = KnowledgeBase.init(tmp_path / "a")
    set_remote(writer, str(remote))
    assert publish(writer).pushed == 1  # the first commit: the remote held nothing
    reader = clone_kb(remote, tmp_path / "b")

    add_article(writer, "backups", "Nightly backups", "Backups run at 02:00.\n", "compile: 1")
    pushed = publish(writer)
    got = sync(reader)

    assert pushed.pushed == 1 and pushed.state.error is None
    assert remote_log(remote)[0] == "compile: 1"
    assert "wiki/topic/backups.md" in got.changed
    assert (reader.root / "wiki/topic/backups.md").read_text() == (
        writer.root / "wiki/topic/backups.md"
    ).read_text()
    with closing(open_state(reader)) as conn:  # indexed by path: a question finds it
        hits = SearchIndex(conn).search("backups", limit=5)
    assert [h.path for h in hits] == ["wiki/topic/backups.md"]


def both_commit(tmp_path):
    """Two knowledge bases on one remote, each with a commit on the same remote commit:
    their articles differ, their indexes and log.md (which every compile rewrites)
    collide. Returns (remote, first, second)."""
    remote = bare(tmp_path / "wiki.git")
    first = KnowledgeBase.init(tmp_path / "a")
    set_remote(first, str(remote))
    publish(first)
    second = clone_kb(remote, tmp_path / "b")
    add_article(first, "backups", "Nightly backups", "Backups run at 02:00.\n", "compile: A")
    add_article(second, "alerts", "Pager alerts", "Alerts page the on-call.\n", "compile: B")
    return remote, first, second


def test_a_push_race_is_won_on_retry_and_nothing_is_lost(tmp_path):
    remote, first, second = both_commit(tmp_path)
    assert publish(first).pushed == 1
    won = publish(second)

    assert won.state.error is None and won.rebased and won.pushed == 1
    assert remote_log(remote)[:2] == ["compile: B", "compile: A"]
    index = remote_file(remote, "index/master-index.md")
    assert "wiki/topic/backups.md" in index and "wiki/topic/alerts.md" in index
    log = remote_file(remote, "log.md")
    assert "created wiki/topic/backups.md" in log and "created wiki/topic/alerts.md" in log
    assert "<<<<<<<" not in log + index
    # the loser took in the winner's article, and the first takes in the second's
    assert (second.root / "wiki/topic/backups.md").is_file()
    assert "wiki/topic/alerts.md" in sync(first).changed
    assert git(first, "rev-parse", "HEAD") == git(second, "rev-parse", "HEAD")


def test_an_article_both_changed_is_not_pushed_and_is_kept(tmp_path):
    remote = bare(tmp_path / "wiki.git")
    first = KnowledgeBase.init(tmp_path / "a")
    set_remote(first, str(remote))
    add_article(first, "backups", "Nightly backups", "Backups run at 02:00.\n", "compile: 1")
    publish(first)
    second = clone_kb(remote, tmp_path / "b")
    add_article(first, "backups", "Nightly backups", "Backups run at 03:00.\n", "compile: A")
    add_article(second, "backups", "Nightly backups", "Backups run at 04:00.\n", "compile: B")
    publish(first)

    stuck = publish(second)

    assert "wiki/topic/backups.md" in stuck.state.error
    assert stuck.state.ahead == 1
    assert "04:00" in (second.root / "wiki/topic/backups.md").read_text()  # kept as it was
    assert git(second, "status", "--porcelain").strip() == ""  # no rebase left half-done
    assert remote_log(remote)[0] == "compile: A"


def test_commits_wait_while_the_remote_is_gone_and_are_pushed_in_order(tmp_path):
    remote = bare(tmp_path / "wiki.git")
    kb = KnowledgeBase.init(tmp_path / "a")
    set_remote(kb, str(remote))
    publish(kb)
    moved = remote.rename(tmp_path / "elsewhere.git")

    add_article(kb, "backups", "Nightly backups", "Backups run at 02:00.\n", "compile: 1")
    first = publish(kb)
    add_article(kb, "alerts", "Pager alerts", "Alerts page the on-call.\n", "compile: 2")
    second = publish(kb)

    assert "cannot reach the wiki remote" in second.state.error
    assert second.state.ahead == 2
    assert first.state.failing_since == second.state.failing_since  # since the first try
    assert read_state(kb).error == second.state.error  # what Status reads, no network
    assert (kb.root / "wiki/topic/alerts.md").is_file()

    moved.rename(remote)
    back = publish(kb)

    assert back.state.error is None and back.pushed == 2
    assert remote_log(remote)[:2] == ["compile: 2", "compile: 1"]
    assert read_state(kb).ahead == 0


def test_a_remote_that_refuses_is_reported_and_the_commit_stays(tmp_path):
    remote = bare(tmp_path / "wiki.git")
    kb = KnowledgeBase.init(tmp_path / "a")
    set_remote(kb, str(remote))
    publish(kb)
    refuse_pushes(remote, "pushes are frozen for the audit")

    add_article(kb, "backups", "Nightly backups", "Backups run at 02:00.\n", "compile: 1")
    refused = publish(kb)

    assert "refused the push" in refused.state.error
    assert "pushes are frozen for the audit" in refused.state.error
    assert refused.state.ahead == 1
    assert remote_log(remote) == ["Create the kb-ai knowledge base"]
    assert git(kb, "log", "-1", "--format=%s").strip() == "compile: 1"


def test_a_rebase_a_killed_process_left_half_done_is_undone_first(tmp_path):
    remote, first, second = both_commit(tmp_path)
    publish(first)
    git(second, "fetch", "-q", "kb-ai")
    stopped = subprocess.run(  # stops at the conflict in the indexes and log.md
        ["git", "-C", str(second.root), "-c", "user.name=x", "-c", "user.email=x@y",
         "rebase", "kb-ai/main"], capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert stopped.returncode != 0

    won = publish(second)

    assert won.state.error is None and won.pushed == 1
    assert remote_log(remote)[:2] == ["compile: B", "compile: A"]
    assert "<<<<<<<" not in remote_file(remote, "log.md")


def test_log_lines_both_sides_wrote_alike_are_all_kept_when_one_side_edited_it_by_hand(tmp_path):
    """Two servers each record an event whose lines are the same text (a blank line, the
    same item): after the rebase the remote's log.md holds each side's section whole, and
    the hand edit of an old line stays where it was made."""
    remote = bare(tmp_path / "wiki.git")
    first = KnowledgeBase.init(tmp_path / "a")
    set_remote(first, str(remote))
    publish(first)
    second = clone_kb(remote, tmp_path / "b")
    same = ["reindexed wiki/topic/backups.md", "sources: 1"]
    append_log(first, "upkeep", same, when=datetime(2026, 12, 1, 9, 0, tzinfo=UTC))
    commit_all(first, "upkeep: A")
    publish(first)
    log = second.log_path  # a person fixed the header's wording, then upkeep ran here too
    log.write_text(log.read_text().replace("oldest first", "the oldest first"))
    append_log(second, "upkeep", same, when=datetime(2026, 12, 1, 9, 5, tzinfo=UTC))
    commit_all(second, "upkeep: B")

    won = publish(second)

    assert won.state.error is None and won.rebased and won.pushed == 1
    merged = remote_file(remote, "log.md")
    item = "\n- reindexed wiki/topic/backups.md\n- sources: 1\n"
    assert merged.endswith(
        f"\n## 2026-12-01T09:00:00+00:00 upkeep\n{item}\n## 2026-12-01T09:05:00+00:00 upkeep\n{item}"
    )
    assert merged.count(item) == 2 and "the oldest first" in merged.splitlines()[2]
