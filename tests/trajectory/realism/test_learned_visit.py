"""The learned (ICAD-like) visit-level detector: chance on real halves, sharp on moved places.

Measured on this data (40 people, halves of four weeks): 0.50 on real halves, 0.85 on moved
places, 0.53 on shuffled times (the counted proxy: 0.51, 0.92, 0.61); the times are not
asserted, a few hundred training days teach the network little about them.
"""

import pytest

from mesa_llm_mobility.trajectory.realism import realism
from mesa_llm_mobility.trajectory.realism.controls import permute_locations

pytest.importorskip("jax")


@pytest.mark.slow
def test_real_halves_are_chance_and_moved_places_are_not(halves):
    real, other = halves
    same = realism(real, other, detectors=("visit_learned",), seed=0)
    assert same["level"].iloc[0] == "visit"
    assert 0.4 < same["auroc"].iloc[0] < 0.6
    places = realism(
        real, permute_locations(other, seed=2), detectors=("visit_learned",), seed=0
    )
    assert places["auroc"].iloc[0] > 0.75
