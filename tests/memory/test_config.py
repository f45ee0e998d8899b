import pytest

from mesa_llm_mobility.memory.config import (
    PAPER_LIFESPANS,
    LifespanParams,
    MemoryConfig,
)
from mesa_llm_mobility.memory.node import NodeType


def test_paper_lifespans_in_minutes():
    event = PAPER_LIFESPANS[NodeType.EVENT]
    assert (event.minimum, event.maximum, event.power) == (120, 5760, 2.4)
    chat = PAPER_LIFESPANS[NodeType.CHAT]
    assert (chat.minimum, chat.maximum, chat.power) == (240, 2880, 3.2)
    reflection = PAPER_LIFESPANS[NodeType.REFLECTION]
    assert (reflection.minimum, reflection.maximum, reflection.power) == (
        480,
        11520,
        1.6,
    )
    assert PAPER_LIFESPANS[NodeType.PLAN] == reflection


@pytest.mark.parametrize("node_type", list(NodeType))
def test_lifespan_endpoints_per_type(node_type):
    params = PAPER_LIFESPANS[node_type]
    assert params.lifespan(0.0) == params.minimum
    assert params.lifespan(1.0) == params.maximum
    assert params.minimum < params.lifespan(0.5) < params.maximum


def test_defaults_and_to_dict():
    config = MemoryConfig()
    assert config.decay == 0.90
    assert dict(config.weights) == {
        "keyword": 1.0,
        "semantic": 1.0,
        "spatiotemporal": 1.0,
    }
    data = config.to_dict()
    assert data["lifespans"]["chat"] == {"minimum": 240, "maximum": 2880, "power": 3.2}


def test_missing_weight_means_mode_off():
    config = MemoryConfig(weights={"keyword": 2.0})
    assert dict(config.weights) == {
        "keyword": 2.0,
        "semantic": 0.0,
        "spatiotemporal": 0.0,
    }


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"decay": 1.0}, "decay"),
        ({"weights": {"smell": 1.0}}, "weights"),
        ({"weights": {"keyword": -1.0}}, "weights.keyword"),
        ({"gamma": -0.1}, "gamma"),
        ({"delta": float("nan")}, "delta"),
        ({"top_k": 0}, "top_k"),
        ({"d_max": 0}, "d_max"),
        ({"extension_cap": 0.5}, "extension_cap"),
        ({"lifespans": {"event": LifespanParams(1, 2, 1)}}, "lifespans"),
    ],
)
def test_bad_config_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=rf"^{field}"):
        MemoryConfig(**kwargs)


def test_lifespan_params_validation():
    with pytest.raises(ValueError, match="maximum"):
        LifespanParams(100, 50, 1.0)
    with pytest.raises(ValueError, match="power"):
        LifespanParams(100, 200, 0)
