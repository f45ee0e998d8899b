"""What a listener hears of a shout: direction and rough distance."""

import numpy as np

from mesa_llm_mobility.evacuation.messages import (
    approximate_distance_m,
    heard_shout,
    shout_details,
)


def test_heard_shout_gives_direction_and_rough_distance_only():
    heard = heard_shout((10, 10), (10, 40), 0.4)  # 12 m north
    assert heard.direction == "N" and heard.approx_distance_m == 10
    assert approximate_distance_m(1.0) == 5 and approximate_distance_m(13.0) == 15
    assert "no" not in heard.describe() or "threat" not in heard.describe()


def test_shout_details_are_what_each_listener_hears():
    rng = np.random.default_rng(1)
    offsets = rng.integers(-37, 38, (500, 2))
    offsets[:50] = offsets[50:100]  # repeated offsets share one computation
    details = shout_details(offsets, 0.4)
    for (dx, dy), detail in zip(offsets.tolist(), details, strict=True):
        heard = heard_shout((10, 10), (10 + dx, 10 + dy), 0.4)
        assert detail == f"{heard.direction} ~{heard.approx_distance_m} m"
    assert shout_details(np.zeros((0, 2), dtype=int), 0.4) == []
