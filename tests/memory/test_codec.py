import pytest

from mesa_llm_mobility.memory.codec import node_from_record, node_to_metadata
from mesa_llm_mobility.memory.node import ConceptNode


def make(**overrides):
    fields = {
        "id": "n3",
        "type": "reflection",
        "content": "Leaving at 7:00 avoids the bridge queue",
        "importance": 0.8,
        "created": 1440.0,
        "last_accessed": 1500.0,
        "expiration": 9000.0,
        "lifespan": 7000.0,
        "keywords": ["bridge", "departure"],
        "spatial_scope": ["St_1_link_2", "Office"],
        "temporal_scope": (420.0, 480.0),
    }
    fields.update(overrides)
    return ConceptNode(**fields)


def test_every_field_round_trips():
    node = make()
    metadata = node_to_metadata(node)
    assert metadata["keywords"] == ["bridge", "departure"]
    assert metadata["spatial_scope"] == ["Office", "St_1_link_2"]
    assert node_from_record(node.id, node.content, metadata) == node


def test_empty_sets_and_no_interval_are_left_out_and_round_trip():
    node = make(keywords=(), spatial_scope=(), temporal_scope=None)
    metadata = node_to_metadata(node)
    assert not {"keywords", "spatial_scope", "t_start", "t_end"} & set(metadata)
    assert node_from_record(node.id, node.content, metadata) == node


def test_corrupt_record_names_node_and_field():
    metadata = node_to_metadata(make())
    del metadata["expiration"]
    with pytest.raises(ValueError, match=r"node 'n3': expiration"):
        node_from_record("n3", "text", metadata)
    metadata = node_to_metadata(make())
    metadata["importance"] = 3.0
    with pytest.raises(ValueError, match=r"node 'n3': importance"):
        node_from_record("n3", "text", metadata)
    with pytest.raises(ValueError, match=r"node 'n3': metadata is missing"):
        node_from_record("n3", "text", None)
