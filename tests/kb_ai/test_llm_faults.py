"""The LLM client against a model that misbehaves on purpose (tests/fakes/faulty_server),
over real loopback HTTP: each fault ends in one clear error, Retry-After is honoured, a
hanging endpoint trips the breaker within two timeouts, replies and fields are bounded,
and only replies the caller accepted are cached."""

import asyncio
import logging
import sqlite3
from dataclasses import replace

import pytest

from compiler.schemas import ARTICLE_SCHEMA, EXTRACTION_SCHEMA
from kb_ai.errors import (
    CircuitOpenError,
    LLMError,
    LLMOutputError,
    LLMTimeoutError,
    LLMTransientError,
)
from kb_ai.llm import Completion, open_llm
from kb_ai.llm._transport import parse_retry_after
from kb_ai.llm.client import retry_delay
from kb_ai.settings import Settings
from tests.fakes.faulty_server import MIX_MODES, FaultyModel, faulty_server, http_date

PATHS = {
    "type": "object",
    "properties": {"paths": {"type": "array", "items": {"type": "string"}, "maxItems": 3}},
    "required": ["paths"],
}


def extract_request(i: int = 0) -> list[dict]:
    """A request kb_responder answers as the extract stage would be (the schema says so)."""
    return [
        {"role": "system", "content": "Extract notes."},
        {
            "role": "user",
            "content": f"Source: Backups {i} (note)\n<source>\nBackups run nightly at 02:00. "
            f"They are kept for 30 days. Restores were tested in March, run {i}.\n</source>",
        },
    ]


def settings_for(server, tmp_path, **kw) -> Settings:
    base = Settings(
        kb_dir=tmp_path,
        model="openai/fake-model",
        api_base=server.base_url,
        api_key="sk-test",
        transport="http",
        retry_backoff=0.001,
        max_retries=1,
    )
    return replace(base, **kw)


def run(settings, work, db_path=None):
    async def main():
        async with open_llm(settings, db_path=db_path) as llm:
            return await work(llm), llm

    return asyncio.run(main())


def extract(i: int = 0):
    return lambda llm: llm.complete(
        extract_request(i), stage="extract", schema=EXTRACTION_SCHEMA, schema_name="extraction"
    )


# -- every fault ends in one clear error -------------------------------------------------


@pytest.mark.parametrize(
    "mode, error, requests",
    [
        ("5xx", LLMTransientError, 2),  # retried once (max_retries=1), then given up
        ("drop", LLMTransientError, 2),
        ("bad_envelope", LLMTransientError, 2),
        ("invalid_json", LLMOutputError, 1),  # the model answered: no retry
        ("missing_keys", LLMOutputError, 1),
        ("cut_off", LLMOutputError, 1),
    ],
)
def test_each_fault_ends_in_one_clear_error(tmp_path, mode, error, requests):
    with faulty_server(mode) as server, pytest.raises(LLMError) as info:
        run(settings_for(server, tmp_path), extract())
    assert type(info.value) is error
    assert str(info.value) and info.value.model == "openai/fake-model"
    assert len(server.requests) == requests


def test_a_cut_off_reply_names_the_setting_to_raise(tmp_path):
    with faulty_server("cut_off") as server, pytest.raises(LLMOutputError) as info:
        run(settings_for(server, tmp_path), extract())
    assert "cut off" in info.value.message and "max_tokens_extract" in (info.value.hint or "")


def test_each_stage_sends_its_max_tokens_and_a_setting_changes_it(tmp_path):
    with faulty_server("ok") as server:
        settings = settings_for(server, tmp_path, max_tokens_select=77)
        run(settings, extract())
        run(settings, lambda llm: llm.complete(extract_request(), stage="select"))
        run(settings, lambda llm: llm.complete(extract_request(), stage="doctor"))
    sent = [r.get("max_tokens") for r in server.requests]
    assert sent == [8192, 77, None]  # a stage without a setting sends none


# -- bounds on replies and fields ---------------------------------------------------------


@pytest.mark.parametrize("transport", ["http", "litellm"])
def test_a_huge_reply_fails_the_call_saying_stage_size_and_limit(tmp_path, transport):
    with faulty_server("huge") as server:  # an extraction with a 5 MB fact
        settings = settings_for(server, tmp_path, transport=transport)
        with pytest.raises(LLMOutputError) as info:
            run(settings, extract(), db_path=tmp_path / "state.db")
    message = str(info.value)
    assert "extract reply" in message and "200,000" in message and "max_reply_chars" in message
    assert len(server.requests) == 1  # not retried: a looping model loops again
    with sqlite3.connect(tmp_path / "state.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM llm_cache").fetchone()[0] == 0
        assert conn.execute("SELECT MAX(LENGTH(error)) FROM llm_calls").fetchone()[0] <= 1000


def test_a_field_far_over_its_schema_bound_fails_the_call(tmp_path):
    # 5,000 characters: a small reply, but a fact may have 400 (900 with the slack).
    with (
        faulty_server(FaultyModel("huge", huge_chars=5_000)) as server,
        pytest.raises(LLMOutputError) as info,
    ):
        run(settings_for(server, tmp_path), extract())
    message = str(info.value)
    assert "extract reply" in message and "facts[0]" in message
    assert "5,000 characters" in message and "bound of 900" in message


def test_a_field_a_little_over_its_bound_passes(tmp_path):
    # Models overshoot unenforced bounds a little; the pipeline trims those.
    with faulty_server(FaultyModel("huge", huge_chars=700)) as server:
        done, _ = run(settings_for(server, tmp_path), extract())
    assert len(done.data["facts"][0]) == 700


def test_every_string_and_list_of_the_stage_schemas_is_bounded():
    from compiler.schemas import PATCH_SCHEMA, TRANSCRIPT_EXTRACTION_SCHEMA, classification_schema

    def unbounded(schema, where="reply"):
        kind = schema.get("type")
        if kind == "string" and "maxLength" not in schema and "enum" not in schema:
            yield where
        if kind == "array":
            if "maxItems" not in schema:
                yield where
            yield from unbounded(schema["items"], f"{where}[]")
        for name, sub in (schema.get("properties") or {}).items():
            yield from unbounded(sub, f"{where}.{name}")

    schemas = [
        EXTRACTION_SCHEMA,
        TRANSCRIPT_EXTRACTION_SCHEMA,
        ARTICLE_SCHEMA,
        PATCH_SCHEMA,
        classification_schema(["concept"], ["wiki/concept/a.md"]),
    ]
    assert [list(unbounded(s)) for s in schemas] == [[]] * len(schemas)


def test_a_prompt_over_max_prompt_chars_is_not_sent(tmp_path):
    huge = [{"role": "user", "content": "material " * 20_000}]  # 180,000 characters
    with faulty_server("ok") as server:
        settings = settings_for(server, tmp_path, max_prompt_chars=100_000)
        with pytest.raises(LLMError, match=r"write prompt is 180,000 characters.*100,000"):
            run(settings, lambda llm: llm.complete(huge, stage="write"))
        with pytest.raises(LLMError, match="answer prompt"):
            run(settings, lambda llm: _last(llm.stream(huge, stage="answer")))
    assert server.requests == []


def test_a_stream_past_the_reply_limit_is_stopped(tmp_path):
    with faulty_server(FaultyModel("huge", huge_chars=50_000)) as server:
        settings = settings_for(server, tmp_path, max_reply_chars=10_000)

        async def collect(llm):
            got = []
            with pytest.raises(LLMOutputError, match="answer reply") as info:
                async for item in llm.stream(extract_request(), stage="answer"):
                    got.append(item)
            return got, info.value

        (got, error), _ = run(settings, collect)
    assert sum(len(g) for g in got) <= 10_000 and "10,000" in str(error)


@pytest.mark.parametrize("transport", ["http", "litellm"])
def test_a_stream_cut_mid_reply_says_it_broke_off_and_is_not_cached(tmp_path, transport):
    db = tmp_path / "state.db"
    with faulty_server(FaultyModel("drop", times=1)) as server:
        settings = settings_for(server, tmp_path, transport=transport)

        async def collect(llm):
            got = []
            with pytest.raises(LLMTransientError, match="broke off") as info:
                async for item in llm.stream(extract_request(), stage="answer"):
                    got.append(item)
            return got, info.value

        (got, _), _ = run(settings, collect, db)
        again, _ = run(
            settings, lambda llm: _last(llm.stream(extract_request(), stage="answer")), db
        )
    assert got and all(isinstance(g, str) for g in got)  # some text had been shown
    assert isinstance(again, Completion) and not again.cached and len(server.requests) == 2


async def _last(stream):
    items = [item async for item in stream]
    return items[-1]


# -- Retry-After ----------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["http", "litellm"])
def test_a_429_waits_as_long_as_retry_after_asks(tmp_path, transport, caplog):
    caplog.set_level(logging.INFO, logger="kb_ai.llm.client")
    with faulty_server(FaultyModel("429", times=1, retry_after="1")) as server:
        settings = settings_for(server, tmp_path, transport=transport)
        done, _ = run(settings, extract())
    assert isinstance(done, Completion) and len(server.requests) == 2
    retries = [r.getMessage() for r in caplog.records if "retry 1 of 1" in r.getMessage()]
    assert retries and retries[0].endswith("in 1.00 s (the server asked for 1 s)")
    # and the server was not asked again before then (a lower bound a sleep guarantees,
    # not a speed: a loaded machine only makes the gap longer)
    assert server.arrivals[1] - server.arrivals[0] >= 0.9


def test_retry_after_as_an_http_date_and_a_cap(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="kb_ai.llm.client")
    model = FaultyModel("429", times=1, retry_after=http_date(3))
    with faulty_server(model) as server:
        run(settings_for(server, tmp_path), extract())
    with faulty_server(FaultyModel("429", times=1, retry_after="3600")) as server:
        run(settings_for(server, tmp_path, retry_after_max=0.25), extract())
    delays = [
        float(r.getMessage().split(" in ")[-1].split(" s")[0])
        for r in caplog.records
        if "retry 1 of 1" in r.getMessage()
    ]
    assert len(delays) == 2
    assert 1.0 <= delays[0] <= 3.0  # a date 3 s ahead, read with 1 s resolution
    assert delays[1] == 0.25  # an hour asked for, the cap kept


def test_retry_after_values_and_the_delay_they_give():
    now = 1_000_000_000.0
    assert parse_retry_after("7") == 7.0 and parse_retry_after(" 2.5 ") == 2.5
    assert parse_retry_after("Sun, 09 Sep 2001 01:46:50 GMT", now=now) == 10.0
    assert parse_retry_after("Sun, 09 Sep 2001 01:46:30 GMT", now=now) == 0.0  # past
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None
    assert parse_retry_after("-3") == 0.0 and parse_retry_after("nan") is None
    asked = LLMTransientError("busy", status=429, retry_after=30.0)
    plain = LLMTransientError("busy", status=429)
    assert retry_delay(0, plain, 1.0, 60.0) == 1.0 and retry_delay(2, plain, 1.0, 60.0) == 4.0
    assert retry_delay(0, asked, 1.0, 60.0) == 30.0
    assert retry_delay(0, asked, 1.0, 10.0) == 10.0  # capped
    assert retry_delay(6, asked, 1.0, 10.0) == 64.0  # never shorter than the backoff


# -- a hanging endpoint -----------------------------------------------------------------------


def test_a_hanging_endpoint_opens_the_breaker_after_two_timed_out_attempts(tmp_path):
    with faulty_server("hang") as server:
        settings = settings_for(server, tmp_path, timeout_select=0.2, max_retries=3)

        async def calls(llm):
            outcomes = []
            for i in range(3):
                try:
                    await llm.complete(extract_request(i), stage="select")
                except LLMError as exc:
                    outcomes.append(exc)
            return outcomes

        (first, second, third), llm = run(settings, calls)
    assert type(first) is LLMTimeoutError and "within 0.2 s (select)" in str(first)
    assert isinstance(second, CircuitOpenError) and isinstance(third, CircuitOpenError)
    assert "did not answer 2 times in a row" in str(second)
    assert "check that it is running" in str(second) and "timeout" in str(second)
    assert llm.breaker.is_open and llm.breaker.timeouts == 2
    assert len(server.requests) == 2  # not 1 + max_retries, and nothing once it opened


def test_a_hanging_stream_times_out_and_counts_toward_the_breaker(tmp_path):
    with faulty_server("hang") as server:
        settings = settings_for(server, tmp_path, timeout_answer=0.2, max_retries=3)

        async def twice(llm):
            errors = []
            for i in range(2):
                with pytest.raises(LLMError) as info:
                    async for _ in llm.stream(extract_request(i), stage="answer"):
                        pass
                errors.append(info.value)
            return errors

        (first, second), llm = run(settings, twice)
    assert type(first) is LLMTimeoutError and "within 0.2 s (answer)" in str(first)
    assert isinstance(second, CircuitOpenError) and len(server.requests) == 2


def test_calls_in_flight_stop_when_the_breaker_opens(tmp_path):
    with faulty_server("hang") as server:
        # Two selections time out at 0.3 s; a write waiting on the same endpoint would
        # wait 20 s more. It must be stopped when the breaker opens instead.
        settings = settings_for(
            server, tmp_path, timeout_select=0.3, timeout_write=20.0, max_retries=0
        )

        async def calls(llm):
            a = asyncio.ensure_future(llm.complete(extract_request(1), stage="select"))
            b = asyncio.ensure_future(llm.complete(extract_request(2), stage="select"))
            await asyncio.sleep(0.05)
            c = asyncio.ensure_future(llm.complete(extract_request(3), stage="write"))
            return await asyncio.gather(a, b, c, return_exceptions=True)

        (a, b, c), llm = run(settings, calls)
    assert type(a) is LLMTimeoutError and type(b) is LLMTimeoutError
    assert isinstance(c, CircuitOpenError), c
    assert len(server.requests) == 3


def test_a_reply_closes_the_breaker_count_of_timeouts(tmp_path):
    model = FaultyModel("hang", times=1)  # one timeout, then well
    with faulty_server(model) as server:
        settings = settings_for(server, tmp_path, timeout_extract=0.3, max_retries=2)

        async def calls(llm):
            first = await extract(1)(llm)
            return first, llm.breaker.timeouts

        (done, timeouts), llm = run(settings, calls)
    assert isinstance(done, Completion) and timeouts == 0 and not llm.breaker.is_open
    assert len(server.requests) == 2


# -- the cache keeps only accepted replies ------------------------------------------------------


def test_a_reply_not_accepted_is_not_cached_and_is_asked_again(tmp_path):
    db = tmp_path / "state.db"
    with faulty_server("ok") as server:
        settings = settings_for(server, tmp_path)
        first, _ = run(settings, extract(), db)  # the caller's checks failed: no accept
        second, _ = run(settings, extract(), db)
        third, _ = run(settings, extract(), db)
    assert not first.cached and not second.cached and not third.cached
    assert len(server.requests) == 3


def test_an_accepted_reply_is_cached_and_a_rejected_hit_is_forgotten(tmp_path):
    db = tmp_path / "state.db"

    async def accepted(llm):
        done = await extract()(llm)
        done.accept()
        return done

    async def rejected(llm):
        done = await extract()(llm)
        done.reject()  # a later check refused what the cache served
        return done

    with faulty_server("ok") as server:
        settings = settings_for(server, tmp_path)
        run(settings, accepted, db)
        hit, _ = run(settings, rejected, db)
        again, _ = run(settings, extract(), db)
    assert hit.cached and not again.cached
    assert len(server.requests) == 2


def test_a_reply_rejected_after_it_was_accepted_is_not_kept(tmp_path):
    db = tmp_path / "state.db"

    async def both(llm):
        done = await extract()(llm)
        done.accept()
        done.reject()
        done.accept()  # a rejection is final
        return done

    with faulty_server("ok") as server:
        settings = settings_for(server, tmp_path)
        run(settings, both, db)
        again, _ = run(settings, extract(), db)
    assert not again.cached and len(server.requests) == 2


def test_a_cached_reply_that_fails_todays_bounds_is_asked_again(tmp_path):
    """A cache written before the bounds (or with looser settings) holds a huge reply:
    it is not served, it is forgotten, and the model is asked again."""
    db = tmp_path / "state.db"

    async def accepted(llm):
        done = await llm.complete(extract_request(), stage="answer")
        done.accept()
        return done

    with faulty_server(FaultyModel("huge", huge_chars=300_000, times=1)) as server:
        loose = settings_for(server, tmp_path, max_reply_chars=0)  # 0: no limit
        huge, _ = run(loose, accepted, db)
        fresh, _ = run(settings_for(server, tmp_path), accepted, db)
        again, _ = run(settings_for(server, tmp_path), accepted, db)
    assert len(huge.text) == 300_000 and not fresh.cached and len(fresh.text) < 1000
    assert again.cached and again.text == fresh.text
    assert len(server.requests) == 2


# -- a seeded mix --------------------------------------------------------------------------


def test_a_seeded_mix_of_faults_ends_every_call_in_a_reply_or_an_llm_error(tmp_path):
    def one_run():
        # (no 429: its Retry-After would make the run wait a second per fault)
        model = FaultyModel("mix", seed=11, mix_modes=[m for m in MIX_MODES if m != "429"])
        with faulty_server(model) as server:
            settings = settings_for(server, tmp_path, max_retries=1, breaker_threshold=0)

            async def calls(llm):
                outcomes = []
                for i in range(24):
                    try:
                        outcomes.append(await extract(i)(llm))
                    except LLMError as exc:  # anything else fails the test
                        outcomes.append(exc)
                return outcomes

            outcomes, _ = run(settings, calls)
        return model.faults, outcomes

    faults, outcomes = one_run()
    again, _ = one_run()
    assert faults == again  # the same seed, the same faults
    assert len({mode for _, mode in faults}) >= 5
    replies = [o for o in outcomes if isinstance(o, Completion)]
    assert replies and len(replies) < len(outcomes)
    for reply in replies:  # what got through is a whole, bounded extraction
        assert len(reply.text) <= 200_000 and reply.finish_reason == "stop"
        assert set(reply.data) >= set(EXTRACTION_SCHEMA["required"])
