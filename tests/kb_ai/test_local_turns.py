"""The one local model serves a question before the compile calls waiting with it."""

import threading

from kb_ai.llm._turns import Turns, priority_of


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
    while len(turns._waiting) < 1:  # the compile call is queued first
        threading.Event().wait(0.01)
    waiting.append(threading.Thread(target=call, args=("answer", "answer")))
    waiting[1].start()
    while len(turns._waiting) < 2:
        threading.Event().wait(0.01)
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
