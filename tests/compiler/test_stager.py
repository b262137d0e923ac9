"""The write stage's background `git add` (compiler._tasks.Stager): it stages while
there is model time to hide it in, and leaves the rest to the run's commit."""

import asyncio

from compiler._tasks import Stager


def test_stager_stages_while_worth_it_and_leaves_the_rest_to_the_commit():
    staged: list[list[str]] = []
    waiting = {"calls": 2}

    async def run() -> None:
        stager = Stager(staged.append, worth=lambda: waiting["calls"] > 0)
        stager.add("wiki/a.md")
        await asyncio.sleep(0.05)  # staged while calls are out
        waiting["calls"] = 0  # the last reply is in
        stager.add("wiki/b.md")
        await asyncio.sleep(0.05)
        await stager.close()

    asyncio.run(run())
    assert staged == [["wiki/a.md"]]  # b.md is the commit's to stage (git add -A)
