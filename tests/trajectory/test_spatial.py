"""Location-aware metrics: zero on a copy, large on a shifted copy that the paper's seven miss."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mesa_llm_mobility.trajectory.metrics import METRICS, evaluate
from mesa_llm_mobility.trajectory.spatial import (
    SPATIAL_METRICS,
    sliced_emd_km,
    spatial_metrics,
)

from .conftest import stays_table

SHIFT_DEGREES = 3.0  # about 330 km north


def _shifted(stays, degrees=SHIFT_DEGREES):
    return stays.assign(latitude=stays["latitude"] + degrees)


def test_a_copy_scores_zero(small_city):
    result = spatial_metrics(small_city.stays, small_city.stays)
    assert list(result) == list(SPATIAL_METRICS)
    for name, value in result.items():
        assert value == pytest.approx(0.0, abs=1e-12), name


def test_a_shifted_copy_scores_badly_while_the_papers_metrics_barely_move(small_split):
    real, generated = small_split.held_out, small_split.history
    moved = _shifted(generated)
    before = evaluate(real, generated)
    after = evaluate(real, moved)
    # the six location-blind metrics of the paper stay where they were ...
    for name in METRICS:
        if name != "Transition":
            assert abs(after[name] - before[name]) < 0.01, (name, before, after)
    # ... the location-aware ones see the move
    near = spatial_metrics(real, generated)
    far = spatial_metrics(real, moved)
    assert near["Density"] < 0.1 and far["Density"] == pytest.approx(math.log(2))
    # 30 people, sparse pairs: the held-out week shares about half of its flows
    assert near["OD flow"] < 0.6 and far["OD flow"] == pytest.approx(math.log(2))
    assert near["EMD km"] < 2.0
    # a pure north shift of 3 degrees is 331.7 km; sliced, it averages |cos| over the slices
    assert 180.0 < far["EMD km"] < 340.0
    # the paper's-text Distance is as blind to the move as the code's
    assert abs(far["Daily distance"] - near["Daily distance"]) < 0.02


def test_sliced_emd_of_a_shift_along_a_slice_direction():
    rng = np.random.default_rng(0)
    points = rng.normal(size=(500, 2))
    shift = np.array([10.0, 0.0])
    # a slice along the shift sees all 10 km, the others cos(angle) of it
    expected = 10.0 * np.mean(np.abs(np.cos(np.arange(36) * np.pi / 36)))
    assert sliced_emd_km(points, points + shift) == pytest.approx(expected, rel=1e-9)
    assert sliced_emd_km(points, points) == pytest.approx(0.0, abs=1e-12)


def test_od_flows_see_an_order_change_that_density_does_not():
    home, work, shop = (34.0, -118.0), (34.1, -118.0), (34.0, -117.9)

    def day(order):
        stamps = ["00:00", "08:00", "12:00", "23:59"]
        return [
            (
                1,
                f"{lat}",
                lat,
                lon,
                "Home",
                f"2024-01-01 {stamps[i]}",
                f"2024-01-01 {stamps[i + 1]}",
            )
            for i, (lat, lon) in enumerate(order)
        ]

    first = stays_table(day([home, work, shop]))
    second = stays_table(day([home, shop, work]))
    result = spatial_metrics(first, second)
    assert result["Density"] == pytest.approx(0.0, abs=1e-12)
    assert result["EMD km"] == pytest.approx(0.0, abs=1e-9)
    # home->work, work->shop against home->shop, shop->work: disjoint pairs
    assert result["OD flow"] == pytest.approx(math.log(2))
