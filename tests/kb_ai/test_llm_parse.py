"""Tolerant parsing of model replies (pure functions)."""

import pytest

from kb_ai.errors import LLMOutputError
from kb_ai.llm.parse import excerpt, fit_schema, json_values, parse_json, parse_reply

PATHS = {"type": "object", "properties": {"paths": {"type": "array"}}, "required": ["paths"]}
ARTICLE = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
    "required": ["title", "body"],
}


@pytest.mark.parametrize(
    "text",
    [
        '{"paths": ["a.md"]}',
        '```json\n{"paths": ["a.md"]}\n```',
        '```\n{"paths": ["a.md"]}\n```',
        '<think>I should pick {a} and [b]</think>\n{"paths": ["a.md"]}',
        '<THINK>\nmaybe {"paths": []}\n</THINK>{"paths": ["a.md"]}',
        'Thought: the user wants page a.\n{"paths": ["a.md"]}',
        'Here is the JSON you asked for:\n\n```json\n{"paths": ["a.md"]}\n```\nHope it helps!',
        '{"paths": ["a.md"]} and then {"paths": ["b.md"]}',
        '["a.md"]',
        'Sure: ["a.md"]',
    ],
)
def test_finds_the_json_a_small_model_buried(text):
    assert parse_json(text, PATHS) == {"paths": ["a.md"]}


def test_a_prose_bracket_before_the_json_is_skipped():
    text = 'Thought: I need [the best pages] {not json}\n{"paths": ["a.md"]}'
    assert parse_json(text, PATHS) == {"paths": ["a.md"]}


def test_a_value_that_does_not_fit_is_passed_over_for_one_that_does():
    text = 'Thought: the list [1, 2] is wrong.\n{"title": "T", "body": "B"}'
    assert parse_json(text, ARTICLE) == {"title": "T", "body": "B"}


def test_a_bare_list_is_not_wrapped_when_the_object_has_other_properties():
    with pytest.raises(LLMOutputError, match="expected a JSON object"):
        parse_json('["a"]', ARTICLE)


def test_missing_required_keys_are_named():
    with pytest.raises(LLMOutputError, match="missing required key\\(s\\): body"):
        parse_json('{"title": "only"}', ARTICLE)


def test_no_json_at_all_raises_with_an_excerpt():
    with pytest.raises(LLMOutputError) as info:
        parse_json("I cannot help with that request.", PATHS)
    assert "I cannot help with that" in str(info.value)


def test_an_unclosed_think_block_is_not_mistaken_for_the_answer():
    with pytest.raises(LLMOutputError):
        parse_json('<think>first {"paths": ["x.md"]} then', PATHS)


def test_truncated_reply_is_never_parsed_as_complete():
    # Valid JSON, but the model stopped at the token limit: it may be missing items.
    with pytest.raises(LLMOutputError, match="cut off at the token limit"):
        parse_reply('{"paths": ["a.md"]}', PATHS, finish_reason="length")


def test_truncated_plain_text_is_refused_too():
    with pytest.raises(LLMOutputError, match="cut off"):
        parse_reply("The answer is", None, finish_reason="length")


@pytest.mark.parametrize("text", ["", "   \n", "<think>hmm</think>"])
def test_empty_reply_raises(text):
    with pytest.raises(LLMOutputError, match="empty"):
        parse_reply(text, PATHS, finish_reason="stop")


def test_plain_text_reply_has_no_data():
    assert parse_reply("Just words.", None, finish_reason="stop") is None


def test_without_schema_any_json_value_is_returned():
    assert parse_json("x [1, 2] y", None) == [1, 2]


def test_json_values_skips_nested_values_and_broken_starts():
    assert list(json_values('{x [1, {"a": [2]}] {"b": 1}')) == [[1, {"a": [2]}], {"b": 1}]


def test_fit_schema_checks_scalar_types():
    with pytest.raises(ValueError, match="expected a JSON integer"):
        fit_schema(True, {"type": "integer"})
    assert fit_schema(3, {"type": "integer"}) == 3


def test_excerpt_is_one_short_line():
    short = excerpt("a\n" * 500, 20)
    assert "\n" not in short and len(short) == 20 and short.endswith("…")


def test_a_string_sent_where_an_object_of_bounded_strings_belongs_is_bounded_too():
    from kb_ai.llm.parse import check_bounds

    fact = {
        "type": "object",
        "properties": {"fact": {"type": "string", "maxLength": 400}, "held": {"maxLength": 10}},
    }
    schema = {"type": "object", "properties": {"facts": {"type": "array", "items": fact}}}
    check_bounds({"facts": ["a fact as a bare string, as a small model sends it"]}, schema)
    with pytest.raises(LLMOutputError, match=r"facts\[0\] is 5,000 characters"):
        check_bounds({"facts": ["x" * 5_000]}, schema, stage="extract")
