"""kb-ai watch: compiles once, then each batch of changes; a delete is reported only."""

import asyncio

from compiler import Compiler
from compiler.watch import watch_and_compile
from wiki import read_article

NOTE = "# Deploys\n\nWe deploy on Tuesdays and Thursdays after the 10:00 stand-up.\n"
NEW = "# Rollbacks\n\nA rollback is one command: make rollback, run by the on-call engineer.\n"


async def next_round(rounds, poke=None):
    """The next round; ``poke()`` is repeated meanwhile, in case the watcher was not yet
    listening when it first ran (file events before that are not seen)."""
    while True:
        if poke:
            poke()
        try:
            return await asyncio.wait_for(rounds.get(), 3)
        except TimeoutError:
            continue


def test_watch_compiles_once_then_changes_and_reports_deletes(kb, settings, fake_llm, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "deploys.md").write_text(NOTE, encoding="utf-8")
    (folder / "old.md").write_text(
        "# Old\n\nThe old runbook lives on the wiki page.\n", encoding="utf-8"
    )

    async def scenario():
        rounds: asyncio.Queue = asyncio.Queue()
        stop = asyncio.Event()
        task = asyncio.create_task(
            watch_and_compile(
                kb, settings, [str(folder)], rounds.put_nowait, debounce_ms=100, stop_event=stop,
                compiler_factory=lambda: Compiler(kb, settings, llm_factory=lambda s, **k: fake_llm),
            )
        )  # fmt: skip
        first = await next_round(rounds)
        new = folder / "rollbacks.md"
        added = await next_round(rounds, lambda: new.write_text(NEW, encoding="utf-8"))
        gone = await next_round(rounds, lambda: (folder / "old.md").unlink(missing_ok=True))
        stop.set()
        await asyncio.wait_for(task, 30)
        return first, added, gone

    first, added, gone = asyncio.run(scenario())
    assert first.first and len(first.result.compiled) == 2
    assert added.changed == [str(folder / "rollbacks.md")]
    assert added.result.compiled == [str((folder / "rollbacks.md").resolve())]
    assert any("make rollback" in read_article(kb, p).body for p in added.result.created)
    assert gone.deleted == [str(folder / "old.md")] and gone.result is None
    # nothing was removed: the old note's article is still there
    assert all((kb.root / p).is_file() for p in first.result.created)


def test_a_revision_dropped_into_a_folder_watched_as_dot_dot_revises_its_source(
    kb, settings, fake_llm, tmp_path, monkeypatch
):
    """`kb-ai watch ../notes` sees the files under it (".." is no hidden folder), and a
    revised copy of a source compiled from elsewhere is that source: no second article."""
    first = tmp_path / "first"
    first.mkdir()
    (first / "deploys.md").write_text(NOTE, encoding="utf-8")
    compiler = Compiler(kb, settings, llm_factory=lambda s, **k: fake_llm)
    (article,) = asyncio.run(compiler.compile_paths([str(first)])).created
    (tmp_path / "notes").mkdir()
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    copy = tmp_path / "notes" / "deploys.md"

    async def scenario():
        rounds: asyncio.Queue = asyncio.Queue()
        stop = asyncio.Event()
        task = asyncio.create_task(
            watch_and_compile(
                kb, settings, ["../notes"], rounds.put_nowait, debounce_ms=100, stop_event=stop,
                compiler_factory=lambda: Compiler(kb, settings, llm_factory=lambda s, **k: fake_llm),
            )
        )  # fmt: skip
        await next_round(rounds)
        revised = NOTE.replace("Thursdays", "Fridays")
        poke = lambda: copy.write_text(revised, encoding="utf-8")  # noqa: E731
        try:  # (the watch missed every change under "..": no round came)
            changed = await asyncio.wait_for(next_round(rounds, poke), 60)
        finally:
            stop.set()
        await asyncio.wait_for(task, 30)
        return changed

    changed = asyncio.run(scenario())
    assert changed.result is not None and changed.result.updated == [article]
    assert not changed.result.created and len(changed.result.revisions) == 1
    assert "Fridays" in read_article(kb, article).body
