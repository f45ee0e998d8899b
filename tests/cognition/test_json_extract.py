import pytest

from mesa_llm_mobility.cognition.json_extract import JSONExtractionError, extract_json


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
