import pytest

from mesa_llm_mobility.cognition.json_extract import (
    JSONExtractionError,
    JSONTruncatedError,
    extract_json,
)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1}',
        '  {"a": 1}\n',
        '```json\n{"a": 1}\n```',
        '```\n{"a": 1}\n```',
        'Sure! Here is my answer: {"a": 1} Hope this helps.',
        'Options [1] and [2] were considered.\n{"a": 1}',
    ],
)
def test_extracts_the_object_wherever_it_stands(text):
    assert extract_json(text) == {"a": 1}


def test_nested_values_survive():
    assert extract_json('prose {"a": {"b": [1, 2, {"c": "}"}]}} more') == {
        "a": {"b": [1, 2, {"c": "}"}]}
    }


@pytest.mark.parametrize("text", ["", "   ", "no json here", '{"oops": '])
def test_failure_explains_itself(text):
    with pytest.raises(JSONExtractionError, match="JSON"):
        extract_json(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"action": "keep", "plan": {"a": 1}, "reason": "the road is',
        '```json\n{"activities": [{"facility": "Home"}, {"facility": ',
        'Here: {"a": "a brace } in a string", "b": {"c": 2}',
        '[{"a": 1}, {"b": ',
    ],
)
def test_a_cut_off_answer_is_reported_not_mined_for_a_nested_object(text):
    with pytest.raises(JSONTruncatedError, match="cut off"):
        extract_json(text)


def test_an_escaped_quote_does_not_end_a_string():
    assert extract_json(r'{"a": "say \"}\" twice"} trailing') == {"a": 'say "}" twice'}
