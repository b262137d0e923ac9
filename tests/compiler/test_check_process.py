"""The checks of model replies in a process of their own (compiler/check_process.py):
the same verdicts as in-process, a crash fails its source rather than hanging the run,
and no process outlives its run."""

import asyncio
import os
import signal
import time

import pytest

from compiler import Compiler
from compiler import check_process as cp
from compiler.extraction import Extraction
from compiler.fidelity import check_extraction
from tests.compiler.conftest import responder_handler
from tests.fakes.fake_llm import FakeLLM

SOURCE = """# Queue retention

On 2 March 2026 the team cut the queue's retention to 14 days.
The old retention was 30 days and cost 1,200 GB of disk.

Steps:
- lower the retention setting
- restart the brokers
- watch the disk graphs
"""

REPLY = {
    "title": "Queue retention",
    "summary": "Retention went down to 10 days in 2025.",
    "facts": ["Retention is 14 days.", "Retention is 14 days.", "The disk held 9,999 GB."],
    "enumerations": [{"name": "steps", "items": ["lower the retention setting"]}],
}


def children() -> set[int]:
    """The processes this test process started that are still running."""
    mine = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        if int(fields[1]) == os.getpid() and fields[0] != "Z":
            mine.add(int(entry))
    return mine


async def started(process: cp.CheckProcess) -> cp.CheckProcess:
    assert await asyncio.wait_for(process.wait_ready(), 60)
    return process


def test_an_extraction_checked_in_the_process_gets_the_same_verdicts_as_in_process():
    here = check_extraction(Extraction.from_data(REPLY), SOURCE)

    async def there():
        with cp.checks_beside(cp.MIN_SOURCES) as process:
            await started(process)
            data = cp.extraction_fields(Extraction.from_data(REPLY))
            future = process.submit("queue.md", cp.checked_extraction, data, SOURCE, 1, True)
            assert future is not None  # (not run here: the process took it)
            return Extraction(**await future)

    checked = asyncio.run(there())
    assert checked == here
    # the checks did change it: a repeat, an unstated number and a wrong summary went
    assert "9,999" not in " ".join(checked.facts) and "10 days" not in checked.summary
    assert checked.enumerations[0]["items"][-1] == "watch the disk graphs"


def test_a_small_run_starts_no_process():
    async def run():
        with cp.checks_beside(1) as process:
            return process, await cp.run_check("a.md", sum, [1, 2])

    assert asyncio.run(run()) == (None, 3)


def test_a_check_process_that_dies_fails_the_source_it_held_and_the_rest_go_on():
    async def run():
        with cp.checks_beside(cp.MIN_SOURCES) as process:
            await started(process)
            held = process.submit("slow.md", time.sleep, 30)
            os.kill(process.pid, signal.SIGKILL)
            began = time.monotonic()
            with pytest.raises(cp.CheckProcessError, match=r"slow\.md: the check process stop"):
                await asyncio.wait_for(held, 30)  # (a hang fails the test)
            waited = time.monotonic() - began
            # what is checked after it runs in-process, with the same answer
            after = await cp.run_check("next.md", sum, [2, 3])
            return waited, after

    waited, after = asyncio.run(run())
    assert waited < 20 and after == 5


def test_a_check_that_raises_raises_in_the_caller_with_its_traceback():
    async def run():
        with cp.checks_beside(cp.MIN_SOURCES) as process:
            await started(process)
            await process.submit("bad.md", int, "not a number")

    with pytest.raises(cp.CheckCrashError, match=r"(?s)checking bad\.md failed.*ValueError"):
        asyncio.run(run())


def test_a_cancelled_run_stops_its_check_process_at_once():
    before = children()
    seen = {}

    async def run():
        with cp.checks_beside(cp.MIN_SOURCES) as process:
            await started(process)
            seen["pid"] = process.pid
            task = asyncio.ensure_future(process.submit("slow.md", time.sleep, 60))
            await asyncio.sleep(0.05)
            task.cancel()  # Ctrl-C: the run cancels what is in flight
            with pytest.raises(asyncio.CancelledError):
                await task

    began = time.monotonic()
    asyncio.run(run())
    assert time.monotonic() - began < 20  # not the 60 s the check would have taken
    assert seen["pid"] not in children() and children() <= before


def test_a_compile_of_many_sources_checks_them_in_a_process_and_leaves_none_behind(
    kb, settings, tmp_path
):
    notes = tmp_path / "many"
    notes.mkdir()
    for i in range(cp.MIN_SOURCES):
        (notes / f"n{i}.md").write_text(
            f"# Service {i} moves to the new cluster\n\nOn 3 May 2026 service {i} moved "
            f"to cluster {i + 10} because the old one ran out of memory.\n",
            encoding="utf-8",
        )
    used = {}

    class WaitsForTheChecks(FakeLLM):
        """Answers once the run's check process is up, so its checks go there."""

        async def complete(self, *a, **k):
            process = cp.current_check_process()
            if process is not None:
                used["ready"] = await process.wait_ready()
                used["pid"] = process.pid
            return await super().complete(*a, **k)

    before = children()
    llm = WaitsForTheChecks(responder_handler)
    compiler = Compiler(kb, settings, llm_factory=lambda s, **k: llm)
    result = asyncio.run(compiler.compile_paths([str(notes)]))

    assert len(result.compiled) == cp.MIN_SOURCES and not result.failed
    assert used["ready"] is True
    assert used["pid"] not in children() and children() <= before
    assert result.created  # the run wrote its articles
