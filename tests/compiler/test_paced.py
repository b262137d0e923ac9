"""A stage's calls started one turn of the event loop apart (compiler._tasks.run_paced):
on Python 3.11 aiohttp writes a request's body in a task of its own, so calls started
together each built their prompt before the first request left."""

import asyncio

from compiler._tasks import Interruptible


def _events(paced: bool) -> list[str]:
    events: list[str] = []

    async def call(i: int) -> None:
        events.append(f"built {i}")

        async def write_body() -> None:  # what aiohttp does on 3.11: a task of its own
            events.append(f"sent {i}")

        writer = asyncio.get_running_loop().create_task(write_body())
        await asyncio.sleep(0.01)  # the reply
        await writer

    async def run() -> list:
        tasks = Interruptible()
        coros = (call(i) for i in range(5))
        return await (tasks.run_paced(coros, 3) if paced else tasks.run_all(coros))

    assert asyncio.run(run()) == [None] * 5
    return events


def test_each_paced_call_is_sent_before_the_next_one_is_built():
    events = _events(paced=True)
    for i in range(3):  # the paced ones: sent before the next is built
        assert events.index(f"sent {i}") < events.index(f"built {i + 1}")
    # the rest go together, after the last paced one
    assert events.index("built 3") > events.index("sent 2")


def test_started_together_every_call_is_built_before_the_first_is_sent():
    events = _events(paced=False)  # why run_paced exists: what the write stage did
    assert events.index("sent 0") > events.index("built 4")
