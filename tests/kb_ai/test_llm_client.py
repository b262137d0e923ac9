"""The LLM client over real HTTP: litellm (and the fast aiohttp transport) against a fake
OpenAI-compatible server on loopback."""

import asyncio
import json
import sqlite3
import sys
import time
from dataclasses import replace

import pytest

from kb_ai.errors import (
    CircuitOpenError,
    ConfigError,
    LLMError,
    LLMOutputError,
    LLMTimeoutError,
    LLMTransientError,
)
from kb_ai.llm import Completion, Usage, open_llm, usage_totals
from kb_ai.settings import Settings
from tests.fakes.openai_server import FakeOpenAIServer, Reply

PATHS = {
    "type": "object",
    "properties": {"paths": {"type": "array", "items": {"type": "string"}}},
    "required": ["paths"],
}
ASK = [{"role": "system", "content": "You pick pages."}, {"role": "user", "content": "Which?"}]


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv


@pytest.fixture
def settings(server, tmp_path):
    return Settings(
        kb_dir=tmp_path,
        model="openai/fake-model",
        api_base=server.base_url,
        api_key="sk-test",
        retry_backoff=0.001,
        max_retries=2,
        breaker_threshold=3,
        timeout_select=5.0,
    )


@pytest.fixture(params=["litellm", "fast"])
def transport(request):
    return request.param


def run(settings, transport, work, db_path=None):
    """Open a client, run ``await work(llm)``, close it, return (result, client)."""

    async def main():
        chosen = replace(settings, transport="http" if transport == "fast" else "litellm")
        async with open_llm(chosen, db_path=db_path) as llm:
            return await work(llm), llm

    return asyncio.run(main())


def select(schema=None, **kw):
    return lambda llm: llm.complete(ASK, stage="select", schema=schema, **kw)


async def used(call):
    """The reply of ``call``, accepted as a caller does once its checks passed (only
    accepted replies are cached)."""
    done = await call
    done.accept()
    return done


def select_used(schema=None, **kw):
    return lambda llm: used(llm.complete(ASK, stage="select", schema=schema, **kw))


def test_success_returns_text_usage_and_logs_the_call(server, settings, transport, tmp_path):
    server.queue("Page a.")
    db = tmp_path / ".kb-ai" / "state.db"
    done, llm = run(settings, transport, select(), db_path=db)
    assert isinstance(done, Completion)
    assert done.text == "Page a." and done.data is None and not done.cached
    assert done.finish_reason == "stop" and done.model == "openai/fake-model"
    assert done.usage.calls == 1 and done.usage.prompt_tokens > 0
    assert done.usage.completion_tokens > 0 and done.usage.cost_usd == 0.0
    assert llm.usage == done.usage
    sent = server.requests[0]
    assert sent["model"] == "fake-model" and sent["messages"] == ASK and sent["temperature"] == 0
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        rows = conn.execute(
            "SELECT stage, model, prompt_tokens, completion_tokens, cost_usd, "
            "cached, ok, error FROM llm_calls"
        ).fetchall()
    assert rows == [
        (
            "select",
            "openai/fake-model",
            done.usage.prompt_tokens,
            done.usage.completion_tokens,
            0.0,
            0,
            1,
            None,
        )
    ]
    assert usage_totals(db)["calls"] == 1


def test_open_llm_without_a_model_says_how_to_set_one(tmp_path):
    with pytest.raises(ConfigError, match="No model configured"):
        open_llm(Settings(kb_dir=tmp_path))


@pytest.mark.parametrize(
    "mode, expected",
    [
        ("json_schema", {"type": "json_schema", "json_schema": {"name": "pick", "schema": PATHS}}),
        ("json_object", {"type": "json_object", "schema": PATHS}),
        ("prompt", None),
    ],
)
def test_structured_output_modes_send_what_the_server_expects(
    server, settings, transport, mode, expected
):
    server.queue('```json\n{"paths": ["wiki/a.md"]}\n```')
    settings = replace(settings, structured_output=mode)
    done, llm = run(settings, transport, select(PATHS, schema_name="pick"))
    assert done.data == {"paths": ["wiki/a.md"]}
    sent = server.requests[0]
    assert sent.get("response_format") == expected
    system = sent["messages"][0]["content"]
    assert ("JSON Schema" in system) == (mode != "json_schema")
    assert sent["messages"][0]["role"] == "system" and len(sent["messages"]) == 2
    assert llm.structured_mode == mode


def test_schema_instruction_gets_its_own_system_message_when_there_is_none(server, settings):
    server.queue('{"paths": []}')
    settings = replace(settings, structured_output="prompt")
    user_only = [{"role": "user", "content": "Which?"}]
    run(settings, "fast", lambda llm: llm.complete(user_only, stage="select", schema=PATHS))
    sent = server.requests[0]["messages"]
    assert sent[0]["role"] == "system" and "JSON Schema" in sent[0]["content"]
    assert sent[1:] == user_only


@pytest.mark.parametrize(
    "model, api_base, expected",
    [
        ("openai/qwen", "http://127.0.0.1:1/v1", "json_object"),
        ("ollama_chat/qwen2.5", None, "json_schema"),
        ("ollama/qwen2.5", "http://127.0.0.1:11434", "json_schema"),
        ("openai/gpt-4o-mini", None, "json_schema"),
        ("openai/davinci-002", None, "prompt"),
    ],
)
def test_auto_mode_per_provider(tmp_path, model, api_base, expected):
    llm = open_llm(Settings(kb_dir=tmp_path, model=model, api_base=api_base))
    assert llm.structured_mode == expected


def test_a_400_on_response_format_falls_back_to_prompt_mode_once(server, settings, transport):
    server.queue(Reply(status=400), '{"paths": ["a.md"]}', '{"paths": ["b.md"]}')
    settings = replace(settings, structured_output="json_schema")

    async def twice(llm):
        first = await llm.complete(ASK, stage="select", schema=PATHS)
        second = await llm.complete(
            [*ASK, {"role": "user", "content": "again"}], stage="select", schema=PATHS
        )
        return first, second

    (first, second), llm = run(settings, transport, twice)
    assert first.data == {"paths": ["a.md"]} and second.data == {"paths": ["b.md"]}
    formats = [r.get("response_format") for r in server.requests]
    assert formats[0]["type"] == "json_schema" and formats[1:] == [None, None]
    assert llm.structured_mode == "prompt"


def test_a_truncated_reply_raises_and_is_not_cached(server, settings, transport):
    server.queue(Reply('{"paths": ["a.md"', finish_reason="length"), '{"paths": ["a.md"]}')

    async def twice(llm):
        with pytest.raises(LLMOutputError, match="cut off at the token limit"):
            await llm.complete(ASK, stage="select", schema=PATHS)
        return await llm.complete(ASK, stage="select", schema=PATHS)

    done, llm = run(settings, transport, twice)
    assert not done.cached and done.data == {"paths": ["a.md"]}
    assert len(server.requests) == 2  # no retry of the output error, no cached bad reply
    assert llm.usage.calls == 2  # the cut-off reply was paid for


def test_unusable_json_raises_output_error_without_retry(server, settings, transport):
    server.queue("I would rather not.")
    with pytest.raises(LLMOutputError, match="rather not"):
        run(settings, transport, select(PATHS))
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [500, 502, 503, 429])
def test_retries_transient_statuses_then_succeeds(server, settings, transport, status):
    server.queue(Reply(status=status), Reply(status=status), "fine")
    done, _ = run(settings, transport, select())
    assert done.text == "fine" and len(server.requests) == 3


def test_a_dropped_connection_is_retried(server, settings, transport):
    server.queue(Reply(drop=True), "fine")
    done, _ = run(settings, transport, select())
    assert done.text == "fine" and len(server.requests) == 2


def test_http_proxy_from_the_environment_is_used_and_no_proxy_respected(
    server, settings, transport, monkeypatch
):
    # The fake server stands in as the proxy; the model's own host does not resolve.
    settings = replace(settings, api_base="http://model.invalid/v1", max_retries=0)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{server.port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    server.queue("via the proxy")
    done, _ = run(settings, transport, select())
    assert done.text == "via the proxy"
    assert server.proxied == ["http://model.invalid/v1/chat/completions"]

    monkeypatch.setenv("NO_PROXY", "model.invalid")
    with pytest.raises(LLMTransientError, match="unreachable|connect|Connection"):
        run(settings, transport, select())
    assert len(server.proxied) == 1


def test_gives_up_after_max_retries_with_a_transient_error(server, settings, transport, tmp_path):
    server.queue(*[Reply(status=500)] * 5)
    db = tmp_path / "state.db"
    with pytest.raises(LLMTransientError) as info:
        run(settings, transport, select(), db_path=db)
    assert info.value.status == 500 and info.value.model == "openai/fake-model"
    assert len(server.requests) == 3  # 1 + max_retries
    with sqlite3.connect(db) as conn:
        ok, error = conn.execute("SELECT ok, error FROM llm_calls").fetchone()
    assert ok == 0 and "500" in error


@pytest.mark.parametrize("status", [400, 401, 403, 404])
def test_never_retries_other_4xx(server, settings, transport, status):
    server.queue(Reply(status=status, body=json.dumps({"error": {"message": "nope"}})))
    with pytest.raises(LLMError) as info:
        run(settings, transport, select())
    assert not isinstance(info.value, LLMTransientError)
    assert info.value.status == status and "nope" in (info.value.body or "")
    assert len(server.requests) == 1


def test_a_slow_model_times_out_per_stage_and_is_retried(server, settings, transport):
    server.queue(*[Reply("late", delay=1.0)] * 3)
    settings = replace(settings, timeout_select=0.2, max_retries=1)
    with pytest.raises(LLMTimeoutError):
        run(settings, transport, select())
    assert len(server.requests) == 2


def test_a_timeout_during_litellms_thread_step_leaves_no_coroutine_behind(
    server, settings, monkeypatch
):
    # litellm runs completion() in a thread, then awaits the coroutine it returns. A
    # timeout in between lost that coroutine, and Python warned "coroutine
    # 'OpenAIChatCompletion.acompletion' was never awaited" on the user's terminal.
    # With a 1 ms timeout the attempt ends at that first wait.
    lost = []
    monkeypatch.setattr(sys, "unraisablehook", lost.append)
    tight = replace(settings, timeout_select=0.001, max_retries=0)
    with pytest.raises(LLMTimeoutError, match="did not answer within 0.001 s"):
        run(tight, "litellm", select())
    assert [str(u.exc_value) for u in lost] == []


def test_the_breaker_opens_and_fails_fast_without_reaching_the_server(server, settings, transport):
    server.responder = lambda request: Reply(status=503)

    async def many(llm):
        errors = []
        for _ in range(6):
            try:
                await llm.complete(ASK, stage="select")
            except LLMError as exc:
                errors.append(exc)
        return errors

    errors, _ = run(replace(settings, max_retries=1), transport, many)
    assert [type(e) for e in errors[:3]] == [LLMTransientError] * 3
    assert all(isinstance(e, CircuitOpenError) for e in errors[3:])
    message = str(errors[3])
    assert "openai/fake-model at http://127.0.0.1:" in message
    assert "failed 3 calls in a row" in message and "check that it is running" in message
    assert len(server.requests) == 3 * 2  # nothing after the breaker opened


def test_after_its_cooldown_the_breaker_lets_one_call_try_again(server, settings):
    import time

    server.responder = lambda request: Reply(status=503)
    # A cooldown long enough that no pause of a loaded machine between two calls passes
    # for it; the sleeps outlast it.
    settings = replace(settings, max_retries=0, breaker_threshold=2, breaker_cooldown=1.0)

    async def scenario(llm):
        outcomes = []

        async def one():
            question = [*ASK[:1], {"role": "user", "content": f"Which, {len(outcomes)}?"}]
            try:
                await llm.complete(question, stage="select")  # never the same: no cache hit
                outcomes.append("ok")
            except CircuitOpenError:
                outcomes.append("refused")
            except LLMError:
                outcomes.append("failed")

        for _ in range(3):
            await one()  # failed, failed (the breaker opens), refused
        await asyncio.sleep(1.2)
        await one()  # one trial after the cooldown: still down, open again at once
        await one()
        server.responder = lambda request: Reply("back")  # the model comes back
        await asyncio.sleep(1.2)
        await one()  # the trial succeeds and closes the breaker
        await one()
        return outcomes

    started = time.monotonic()
    outcomes, _ = run(settings, "fast", scenario)
    assert outcomes == ["failed", "failed", "refused", "failed", "refused", "ok", "ok"]
    assert len(server.requests) == 5  # the refused calls never reached it
    assert time.monotonic() - started < 30  # the cooldown, not the default, decided


def test_a_success_resets_the_breaker(server, settings):
    server.queue(
        Reply(status=401), Reply(status=401), "ok", Reply(status=401), Reply(status=401), "ok again"
    )

    async def calls(llm):
        results = []
        for _ in range(6):
            try:
                results.append(
                    (await llm.complete(ASK, stage="select", max_tokens=len(results) + 1)).text
                )
            except LLMError as exc:
                results.append(type(exc).__name__)
        return results

    results, _ = run(settings, "fast", calls)
    assert results == ["LLMError", "LLMError", "ok", "LLMError", "LLMError", "ok again"]


def test_an_identical_request_is_served_from_the_cache(server, settings, transport, tmp_path):
    server.queue('{"paths": ["a.md"]}')
    db = tmp_path / "state.db"

    async def twice(llm):
        return [await used(llm.complete(ASK, stage="select", schema=PATHS)) for _ in range(2)]

    (paid, hit), llm = run(settings, transport, twice, db_path=db)
    assert len(server.requests) == 1
    assert hit.cached and hit.data == paid.data == {"paths": ["a.md"]}
    assert hit.usage == Usage() and llm.usage == paid.usage
    # The cache is in state.db: a new client (a new run) does not pay again either.
    again, _ = run(settings, transport, select_used(PATHS), db_path=db)
    assert again.cached and len(server.requests) == 1
    totals = usage_totals(db)
    assert totals["calls"] == 1 and totals["cached_calls"] == 2
    assert totals["prompt_tokens"] == paid.usage.prompt_tokens


def test_a_busy_client_still_finds_replies_an_earlier_client_cached(server, settings, tmp_path):
    """After a few calls the store answers misses from the cached keys it read: a reply
    cached by an earlier run must still be found, and new requests still asked."""
    db = tmp_path / "state.db"

    def question(i):
        return [*ASK[:1], {"role": "user", "content": f"Which page, {i}?"}]

    earlier, _ = run(
        settings, "fast", lambda llm: used(llm.complete(question(7), stage="select")), db
    )

    async def many(llm):
        replies = []
        for i in range(12):  # past the lookups after which the keys are read
            replies.append(await used(llm.complete(question(i), stage="select")))
            await asyncio.sleep(0.01)
        return replies

    replies, llm = run(settings, "fast", many, db)
    assert [r.cached for r in replies] == [i == 7 for i in range(12)]
    assert replies[7].text == earlier.text
    assert len(server.requests) == 1 + 11 and llm.usage.calls == 11


def test_a_new_cache_finds_what_its_own_client_cached_since(server, settings, tmp_path):
    """A new knowledge base's cache holds no key: its misses are answered at once, and
    a reply this client cached since is found (not asked for again)."""
    db = tmp_path / "state.db"

    async def twice(llm):
        await asyncio.sleep(0.05)  # (the store has connected and looked at its keys)
        return [await used(llm.complete(ASK, stage="select")) for _ in range(2)]

    (paid, again), llm = run(settings, "fast", twice, db)
    assert not paid.cached and again.cached and again.text == paid.text
    assert len(server.requests) == 1 and llm.usage.calls == 1


def test_a_cache_too_large_to_hold_its_keys_is_still_used(server, settings, tmp_path, monkeypatch):
    import kb_ai.llm.store

    monkeypatch.setattr(kb_ai.llm.store, "KNOWN_KEYS_MAX", 0)  # every lookup asks SQLite
    server.queue('{"paths": ["a.md"]}')
    db = tmp_path / "state.db"
    paid, _ = run(settings, "fast", select_used(PATHS), db_path=db)
    again, _ = run(settings, "fast", select_used(PATHS), db_path=db)
    assert again.cached and again.data == paid.data and len(server.requests) == 1


def test_without_a_db_the_cache_lives_in_memory_only(server, settings):
    async def twice(llm):
        return [await used(llm.complete(ASK, stage="select")) for _ in range(2)]

    (_, hit), _ = run(settings, "fast", twice)
    assert hit.cached
    run(settings, "fast", select())
    assert len(server.requests) == 2


def test_different_schema_or_max_tokens_is_a_different_request(server, settings):
    async def calls(llm):
        await llm.complete(ASK, stage="select")
        await llm.complete(ASK, stage="select", max_tokens=50)
        server.queue('{"paths": []}')
        await llm.complete(ASK, stage="select", schema=PATHS)

    run(settings, "fast", calls)
    assert len(server.requests) == 3


def test_concurrency_never_exceeds_max_concurrency(server, settings, transport):
    server.responder = lambda request: Reply("ok", delay=0.05)
    settings = replace(settings, max_concurrency=3)

    async def many(llm):
        asks = [[{"role": "user", "content": f"q{i}"}] for i in range(12)]
        return await asyncio.gather(*(llm.complete(m, stage="select") for m in asks))

    results, llm = run(settings, transport, many)
    assert len(results) == 12 and len(server.requests) == 12
    assert server.max_in_flight == 3
    assert llm.usage.calls == 12


def test_a_high_max_concurrency_is_reached_not_capped_by_the_http_pool(server, settings):
    server._httpd.socket.listen(256)  # the fake must accept them all at once
    server.responder = lambda request: Reply("ok", delay=1.5)  # all 120 sent well within it
    settings = replace(settings, max_concurrency=120)

    async def many(llm):
        asks = [[{"role": "user", "content": f"q{i}"}] for i in range(120)]
        return await asyncio.gather(*(llm.complete(m, stage="select") for m in asks))

    results, _ = run(settings, "fast", many)
    assert len(results) == 120 and server.max_in_flight == 120  # aiohttp alone stops at 100


def test_streaming_yields_deltas_in_order_then_one_completion(server, settings, transport):
    text = "The wiki says the deploy runs at noon [Deploys](wiki/ops/deploys.md)."
    server.queue(text)

    async def collect(llm):
        return [item async for item in llm.stream(ASK, stage="answer")]

    items, llm = run(settings, transport, collect)
    deltas, final = items[:-1], items[-1]
    assert len(deltas) > 3 and all(isinstance(d, str) for d in deltas)
    assert "".join(deltas) == text
    assert isinstance(final, Completion) and final.text == text and not final.cached
    assert final.usage.calls == 1 and final.usage.completion_tokens > 0
    assert final.usage.prompt_tokens > 0 and llm.usage == final.usage
    sent = server.requests[0]
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}


def test_a_streamed_json_reply_is_asked_for_by_schema_and_parsed_at_the_end(
    server, settings, transport
):
    # The extractive answer streams its pick: the JSON arrives in pieces, then once parsed.
    server.queue('{"paths": ["wiki/a.md", "wiki/b.md"]}', "I would read a.md first")

    async def collect(llm):
        good = [i async for i in llm.stream(ASK, stage="answer", schema=PATHS)]
        with pytest.raises(LLMOutputError):
            [i async for i in llm.stream(ASK, stage="answer", schema=PATHS)]
        return good

    items, _ = run(settings, transport, collect)
    deltas, final = items[:-1], items[-1]
    assert len(deltas) > 1 and "".join(deltas) == final.text
    assert final.data == {"paths": ["wiki/a.md", "wiki/b.md"]}
    sent = server.requests[0]
    assert sent["stream"] is True and sent["response_format"]["schema"] == PATHS


def test_streaming_retries_errors_before_the_first_delta(server, settings, transport):
    server.queue(Reply(status=503), "hello there")

    async def collect(llm):
        return [item async for item in llm.stream(ASK, stage="answer")]

    items, _ = run(settings, transport, collect)
    assert "".join(items[:-1]) == "hello there" and len(server.requests) == 2


def test_streaming_a_cached_answer_costs_nothing(server, settings):
    server.queue("cached words")

    async def twice(llm):
        first = [i async for i in llm.stream(ASK, stage="answer")]
        first[-1].accept()
        second = [i async for i in llm.stream(ASK, stage="answer")]
        return first, second

    (_, second), _ = run(settings, "fast", twice)
    assert second[0] == "cached words" and second[-1].cached
    assert len(server.requests) == 1


def test_a_freed_slot_sends_its_next_call_before_the_reply_is_checked(server, settings):
    """One slot, two calls: the first reply's reader checks it for 1 s of CPU on the
    event loop (as a compile checks what the model wrote). The second call takes the
    freed slot and its request reaches the model before that check, not after it: the
    model works while replies are read (16 in flight lost ~20 ms a call to this)."""
    settings = replace(settings, max_concurrency=1, transport="http")
    server.queue(Reply("first", delay=0.1), Reply("second", delay=0.1))
    checked = {}

    async def first(llm):
        done = await llm.complete(ASK, stage="select")
        checked["from"] = time.monotonic()
        time.sleep(1.0)  # the reader's checks: the loop does nothing else meanwhile
        checked["to"] = time.monotonic()
        return done

    async def main():
        async with open_llm(settings) as llm:
            return await asyncio.gather(first(llm), llm.complete(ASK, stage="select"))

    a, b = asyncio.run(main())
    assert (a.text, b.text) == ("first", "second")
    second_arrived = server.arrivals[1]
    # before the check ended (it began as the first call returned); after it otherwise
    assert second_arrived < checked["to"], "the second request waited for the first reply's check"


def test_a_slot_whose_request_is_never_reported_sent_delays_readers_by_patience_only():
    """A transport that cannot tell when its request is written is counted as sent at
    once by the client; should a holder never report it, a reader waits at most the
    slots' patience, never for the holder's reply."""
    from kb_ai.llm._slots import Slots

    async def main():
        slots = Slots(2, patience=0.05)
        held = asyncio.Event()

        async def holder():
            async with slots.slot():  # never calls sent()
                held.set()
                await asyncio.sleep(1.0)

        task = asyncio.ensure_future(holder())
        await held.wait()
        async with slots.slot() as sent:
            sent()
        started = time.monotonic()
        await slots.sent_first()
        waited = time.monotonic() - started
        task.cancel()
        return waited

    waited = asyncio.run(main())
    assert 0.04 <= waited < 0.5


def test_a_reader_lets_calls_waiting_for_a_slot_take_one_before_it_reads():
    """A reply read while other calls still wait for a slot would hold back the slot of
    the next reply to come in (the loop does one thing at a time): the reader waits until
    no call waits (here: the second waiting call gets the slot once the first is done),
    and never longer than the slots' patience."""
    from kb_ai.llm._slots import Slots

    async def main(patience: float, hold: float) -> tuple[list[str], float]:
        slots = Slots(1, patience=patience)
        order: list[str] = []

        async def call(name: str) -> None:
            async with slots.slot() as sent:
                sent()
                order.append(f"{name} sent")
                await asyncio.sleep(hold)

        async with slots.slot() as sent:
            sent()
            waiting = [asyncio.ensure_future(call(n)) for n in ("b", "c")]
            await asyncio.sleep(0.01)  # both wait for this slot
        started = time.monotonic()
        await slots.sent_first()
        order.append("a reads its reply")
        waited = time.monotonic() - started
        for task in waiting:
            task.cancel()
        await asyncio.gather(*waiting, return_exceptions=True)
        return order, waited

    order, _ = asyncio.run(main(patience=5.0, hold=0.05))
    assert order == ["b sent", "c sent", "a reads its reply"]
    order, waited = asyncio.run(main(patience=0.05, hold=10.0))  # c waits for ever
    assert order == ["b sent", "a reads its reply"]
    assert 0.04 <= waited < 0.5


def test_a_stream_closed_from_another_task_gives_its_slot_back():
    """A web client gone mid-answer: the answer's stream is closed by the event loop's
    finaliser, in another task. Its slot comes back (it did not: after max_concurrency
    abandoned answers every call of the server waited for ever)."""
    from kb_ai.llm._slots import Slots

    async def main():
        slots = Slots(1)

        async def stream():
            async with slots.slot():
                yield "a token"
                await asyncio.sleep(10)

        answer = stream()
        await anext(answer)  # the slot is held, in this task's context
        await asyncio.get_running_loop().create_task(answer.aclose())
        async with asyncio.timeout(2):
            async with slots.slot() as sent:
                sent()
        return True

    assert asyncio.run(main())
