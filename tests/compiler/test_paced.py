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


def test_the_articles_with_the_most_material_are_asked_for_first(kb, settings, tmp_path):
    """A model writes long articles from long material: those go first, so the calls
    still out at the end are short ones. The run reports its articles in plan order."""
    from dataclasses import replace

    from compiler import Compiler
    from tests.compiler.conftest import responder_handler
    from tests.fakes.fake_llm import FakeLLM

    notes = tmp_path / "notes"
    notes.mkdir()
    sizes = {"alpha": 1, "bravo": 6, "charlie": 3, "delta": 9}
    for name, size in sizes.items():
        facts = "".join(f"- {name.title()} fact {i}: the value is {i}.\n" for i in range(size))
        (notes / f"{name}.md").write_text(f"# {name.title()}\n\n{facts}", encoding="utf-8")
    llm = FakeLLM(responder_handler)
    one_at_a_time = replace(settings, max_concurrency=1)
    compiler = Compiler(kb, one_at_a_time, llm_factory=lambda s, **k: llm)
    result = asyncio.run(compiler.compile_paths([str(notes)]))

    writes = [c for c in llm.calls if c.stage == "write"]
    asked = [next(n for n in sizes if n.title() in c.messages[-1]["content"]) for c in writes]
    assert asked == sorted(sizes, key=lambda n: -sizes[n])
    assert [p.rsplit("/", 1)[-1].removesuffix(".md") for p in result.created] == list(sizes)
