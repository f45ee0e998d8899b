"""The learned (ICAD-like) visit-level detector: chance on real halves, sharp on shuffles."""

import pytest

from mesa_llm_mobility.trajectory.realism import realism
from mesa_llm_mobility.trajectory.realism.controls import (
    permute_locations,
    shuffle_times,
)

pytest.importorskip("jax")


@pytest.mark.slow
def test_real_halves_are_chance_and_moved_places_and_times_are_not(halves):
    real, other = halves
    same = realism(real, other, detectors=("visit_learned",), seed=0)
    assert same["level"].iloc[0] == "visit"
    assert 0.4 < same["auroc"].iloc[0] < 0.6
    places = realism(
        real, permute_locations(other, seed=2), detectors=("visit_learned",), seed=0
    )
    times = realism(
        real, shuffle_times(other, seed=2), detectors=("visit_learned",), seed=0
    )
    assert places["auroc"].iloc[0] > 0.75
    assert times["auroc"].iloc[0] > 0.75
