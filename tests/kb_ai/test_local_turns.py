"""The one local model serves a question before the compile calls waiting with it."""

import threading
import time

from kb_ai.llm._turns import Turns, priority_of


def wait_queued(turns: Turns, n: int) -> None:
    """Until ``n`` calls wait for their turn (a failure, not a hang, if they never do)."""
    deadline = time.monotonic() + 10
    while len(turns._waiting) < n:
        assert time.monotonic() < deadline, f"{len(turns._waiting)} of {n} calls queued"
        time.sleep(0.01)


def test_a_question_waiting_behind_compile_calls_goes_first():
    turns = Turns()
    order: list[str] = []
    started = threading.Event()
    release = threading.Event()

    def call(name: str, stage: str, hold: threading.Event | None = None) -> None:
        with turns.turn(priority_of(stage)) as got:
            assert got
            order.append(name)
            if hold is not None:
                started.set()
                hold.wait()

    running = threading.Thread(target=call, args=("extract 1", "extract", release))
    running.start()
    started.wait()
    waiting = [threading.Thread(target=call, args=("write 1", "write"))]
    waiting[0].start()
    wait_queued(turns, 1)  # the compile call is queued first
    waiting.append(threading.Thread(target=call, args=("answer", "answer")))
    waiting[1].start()
    wait_queued(turns, 2)
    release.set()
    for t in (running, *waiting):
        t.join()
    assert order == ["extract 1", "answer", "write 1"]


def test_a_call_cancelled_while_waiting_gives_up_its_place():
    turns = Turns()
    cancel = threading.Event()
    result: list[bool] = []
    with turns.turn(priority_of("extract")):
        t = threading.Thread(target=lambda: result.append(_try(turns, cancel)))
        t.start()
        cancel.set()
        t.join()
    assert result == [False]
    with turns.turn(priority_of("answer")) as got:  # the model is free again
        assert got


def _try(turns: Turns, cancel: threading.Event) -> bool:
    with turns.turn(priority_of("write"), cancel) as got:
        return got


def _served_in_order(turns: Turns, queued: list[tuple[str, str]]) -> list[str]:
    """The order ``queued`` (name, who) compile calls get the model in, all waiting while
    a first call of Ada's runs."""
    order: list[str] = []
    started, release = threading.Event(), threading.Event()

    def call(name: str, who: str, hold: threading.Event | None = None) -> None:
        with turns.turn(priority_of("write"), who=who) as got:
            assert got
            order.append(name)
            if hold is not None:
                started.set()
                hold.wait()

    running = threading.Thread(target=call, args=("ada 0", "Ada", release))
    running.start()
    started.wait()
    waiting = []
    for n, (name, who) in enumerate(queued, start=1):
        waiting.append(threading.Thread(target=call, args=(name, who)))
        waiting[-1].start()
        wait_queued(turns, n)  # queued in this order
    release.set()
    for t in (running, *waiting):
        t.join()
    return order


def test_people_waiting_are_served_in_turn_not_in_arrival_order():
    order = _served_in_order(
        Turns(),
        [("ada 1", "Ada"), ("ada 2", "Ada"), ("ada 3", "Ada"), ("bob 1", "Bob"), ("bob 2", "Bob")],
    )
    # Bob arrived after three of Ada's calls, and is served after her running one
    assert order == ["ada 0", "bob 1", "ada 1", "bob 2", "ada 2", "ada 3"]


def test_the_caller_of_a_question_reaches_the_local_models_queue():
    """The application layer names who asks; each model request carries it."""
    import asyncio

    from kb_ai.llm import calling_as
    from kb_ai.llm._turns import caller

    async def model_call() -> str:  # a call made in a task the question started
        return caller.get()

    async def ask() -> str:
        with calling_as("Rita Reader"):
            return await asyncio.create_task(model_call())

    assert asyncio.run(ask()) == "Rita Reader" and caller.get() == ""
