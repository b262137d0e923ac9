"""A compile killed outright (kill -9, a power cut) and run again: the wiki ends as if the
killed run had never started or had finished, never half of each."""

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from contextlib import closing

import pytest

from tests.fakes.kb_responder import respond, stage_of
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from wiki import all_sources, git, list_articles, load_catalog, open_state, source_articles

SOURCES = 8


def write_notes(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(SOURCES):
        (notes / f"n{i}.md").write_text(
            f"# Subject {i}\n\nA fact about subject {i} that the team relies on.\n",
            encoding="utf-8",
        )
    return notes


def start_compile(kb, notes, server, *extra):
    env = {
        **os.environ,
        "KB_AI_MODEL": "openai/fake-model",
        "KB_AI_API_BASE": server.base_url,
        "KB_AI_API_KEY": "sk-test",
        "KB_AI_MAX_CONCURRENCY": "1",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "kb_ai", "--kb", str(kb.root), "compile", str(notes), "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(predicate, what, proc=None):
    deadline = time.monotonic() + 120
    while not predicate():
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the compile ended before {what}: {proc.communicate()}")
        if time.monotonic() > deadline:
            if proc is not None:
                proc.kill()
            pytest.fail(f"no {what} within 120 s")
        time.sleep(0.02)


def creating(request):
    """kb_responder, but its classify never sees the catalog: it creates an article for
    every source, as a model does when nothing listed looks like the same subject."""
    if stage_of(request) == "classify":
        messages = [
            {**m, "content": re.sub(r"^- \[.*$", "", m.get("content") or "", flags=re.M)}
            for m in request["messages"]
        ]
        request = {**request, "messages": messages}
    return respond(request)


def retitling(request):
    """``creating``, naming each new article a little differently (a model is not
    deterministic): the killed run's articles are no longer the same paths."""
    reply = creating(request)
    if stage_of(request) != "classify":
        return reply
    data = json.loads(reply.content)
    for article in data["articles"]:
        article["title"] += " notes"
    return Reply(json.dumps(data))


def slow_writes(request):
    reply = creating(request)
    if stage_of(request) == "write":
        return Reply(reply.content, delay=0.4)
    return reply


def assert_each_source_once_indexed_and_committed(kb, notes):
    articles = sorted(list_articles(kb))
    assert len(articles) == SOURCES, articles
    with closing(open_state(kb)) as conn:
        rows = all_sources(conn)
    recorded = []
    for i in range(SOURCES):
        row = rows[str((notes / f"n{i}.md").resolve())]
        assert row["status"] == "ok"
        recorded += source_articles(row)
    assert sorted(recorded) == articles  # every article belongs to exactly one source
    assert {e.path for e in load_catalog(kb)} == set(articles)  # and is in the index
    assert git(kb, "status", "--porcelain", "--untracked-files=all").strip() == ""
    tracked = git(kb, "ls-files", "wiki").split()
    assert sorted(tracked) == articles


@pytest.mark.parametrize("written_before_kill", [1, 3])
def test_kill_9_while_articles_are_written_then_a_rerun_leaves_each_article_once(
    kb, tmp_path, written_before_kill
):
    notes = write_notes(tmp_path)
    with FakeOpenAIServer(slow_writes) as server:
        proc = start_compile(kb, notes, server)
        wait_for(
            lambda: len(list(kb.wiki_dir.rglob("*.md"))) >= written_before_kill,
            f"{written_before_kill} article(s) on disk",
            proc,
        )
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    assert 0 < len(list(kb.wiki_dir.rglob("*.md"))) < SOURCES  # killed mid-write

    with FakeOpenAIServer(retitling) as server:
        again = start_compile(kb, notes, server)
        out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    summary = json.loads(out)
    assert len(summary["compiled"]) == SOURCES and not summary["failed"]
    assert_each_source_once_indexed_and_committed(kb, notes)


def test_kill_9_after_the_sources_were_recorded_keeps_their_articles(kb, tmp_path):
    """Killed between recording the sources and the commit: the next run, with nothing
    left to compile, indexes and commits what the killed run finished."""
    notes = write_notes(tmp_path)
    reached, done = tmp_path / "commit-reached", tmp_path / "commit-refused"
    hook = kb.root / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    # git's own hook holds the commit back until the test has killed kb-ai, then refuses it
    hook.write_text(f"#!/bin/sh\ntouch '{reached}'\nsleep 1\ntouch '{done}'\nexit 1\n")
    hook.chmod(0o755)

    with FakeOpenAIServer(respond) as server:
        proc = start_compile(kb, notes, server)
        wait_for(reached.exists, "the commit", proc)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        wait_for(done.exists, "git to give up")
        hook.unlink()
        with closing(open_state(kb)) as conn:
            assert all(r["status"] == "ok" for r in all_sources(conn).values())
        assert git(kb, "status", "--porcelain").strip()  # the killed run committed nothing

        again = start_compile(kb, notes, server)
        out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert len(json.loads(out)["skipped"]) == SOURCES
    assert_each_source_once_indexed_and_committed(kb, notes)


def test_sigterm_stops_like_ctrl_c_and_commits_what_finished(kb, tmp_path):
    """SIGTERM, what `docker stop` and service managers send, is handled like Ctrl-C."""
    notes = write_notes(tmp_path)
    with FakeOpenAIServer(slow_writes) as server:
        proc = start_compile(kb, notes, server)
        wait_for(lambda: any(kb.wiki_dir.rglob("*.md")), "an article on disk", proc)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    summary = json.loads(out)
    assert summary["interrupted"] and 1 <= len(summary["created"]) < SOURCES
    assert sorted(list_articles(kb)) == sorted(summary["created"])
    assert {e.path for e in load_catalog(kb)} == set(summary["created"])
    assert git(kb, "status", "--porcelain").strip() == ""
    assert git(kb, "log", "-1", "--format=%h").strip() == summary["commit"]


def killed_run_rewrites(kb, path, text):
    """What a run killed mid-write leaves: ``path`` rewritten under the journal, and no
    record or commit after it."""
    from compiler.recovery import journaled

    with journaled(kb, path):
        (kb.root / path).write_text(text, encoding="utf-8")


def test_an_updated_article_is_restored_and_one_edited_by_hand_since_is_kept(
    kb, settings, fake_llm, tmp_path
):
    from compiler import Compiler
    from compiler.recovery import reconcile, unfinished_run

    notes = write_notes(tmp_path)
    compiler = Compiler(kb, settings, llm_factory=lambda s, **k: fake_llm)
    assert not asyncio.run(compiler.compile_paths([str(notes)])).failed
    first, second = sorted(list_articles(kb))[:2]
    committed = (kb.root / first).read_text(encoding="utf-8")

    killed_run_rewrites(kb, first, committed + "\nA sentence the killed run added.\n")
    killed_run_rewrites(kb, second, "the killed run's version\n")
    (kb.root / second).write_text("edited by hand after the kill\n", encoding="utf-8")
    assert unfinished_run(kb)

    assert reconcile(kb) is None
    assert (kb.root / first).read_text(encoding="utf-8") == committed
    assert (kb.root / second).read_text(encoding="utf-8") == "edited by hand after the kill\n"
    log = kb.log_path.read_text(encoding="utf-8")
    assert f"rolled back {first}" in log and f"kept {second}" in log
    assert not unfinished_run(kb)
