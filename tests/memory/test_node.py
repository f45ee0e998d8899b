import math

import pytest

from mesa_llm_mobility.memory.node import ConceptNode, NodeType, parse_interval


def make(**overrides):
    fields = {
        "id": "n1",
        "type": "event",
        "content": "Heavy queue on St_1_link_2 at 7:40",
        "importance": 0.6,
        "created": 460.0,
        "expiration": 1000.0,
        "lifespan": 540.0,
        "keywords": ["Queue", " congestion "],
        "spatial_scope": ["St_1_link_2"],
        "temporal_scope": (455, 470),
    }
    fields.update(overrides)
    return ConceptNode(**fields)


def test_valid_node_is_normalised():
    node = make()
    assert node.type is NodeType.EVENT
    assert node.keywords == frozenset({"queue", "congestion"})
    assert node.spatial_scope == frozenset({"St_1_link_2"})
    assert node.temporal_scope == (455.0, 470.0)
    assert node.last_accessed == 460.0
    assert not node.is_expired(1000.0)
    assert node.is_expired(1000.5)


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"content": "   "}, "content"),
        ({"content": ""}, "content"),
        ({"importance": 1.2}, "importance"),
        ({"importance": -0.01}, "importance"),
        ({"importance": math.nan}, "importance"),
        ({"importance": True}, "importance"),
        ({"type": "dream"}, "type"),
        ({"id": ""}, "id"),
        ({"created": math.inf}, "created"),
        ({"expiration": 100.0}, "expiration"),
        ({"lifespan": 0}, "lifespan"),
        ({"last_accessed": 10.0}, "last_accessed"),
        ({"keywords": "queue"}, "keywords"),
        ({"keywords": ["ok", ""]}, "keywords"),
        ({"spatial_scope": [3]}, "spatial_scope"),
        ({"temporal_scope": (10, 5)}, "temporal_scope"),
        ({"temporal_scope": (1, 2, 3)}, "temporal_scope"),
        ({"temporal_scope": ("a", 2)}, "temporal_scope.start"),
    ],
)
def test_bad_values_raise_value_error_naming_the_field(overrides, field):
    with pytest.raises(ValueError, match=rf"^{field}:"):
        make(**overrides)


def test_unknown_type_lists_known_types():
    with pytest.raises(ValueError, match="event, chat, reflection, plan"):
        make(type="dream")


def test_parse_interval_accepts_none_and_lists():
    assert parse_interval(None) is None
    assert parse_interval([1, 2]) == (1.0, 2.0)


def test_node_is_immutable():
    node = make()
    with pytest.raises(AttributeError):
        node.importance = 0.9
