"""Verification of the pedestrian world: RiMEA / Juelich tests adapted to the 0.4 m raster.

What the raster passes, and what it cannot express (asserted as it is, so a change of the engine
shows here and in docs/evacuation.md), see mesa_llm_mobility/evacuation/validation.py.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from mesa_llm_mobility.evacuation.plaza import Terrain, passable_mask
from mesa_llm_mobility.evacuation.validation import (
    FREE_SPEED_M_S,
    MAX_DENSITY_PER_M2,
    bottleneck,
    corner,
    corridor,
    raster,
    ring_corridor_speed,
    rotated_corridor,
    walk,
    weidmann_speed,
)

RIMEA_1_S = (26.0, 34.0)


def _assert_engine_invariants(result):
    """No overlap, no opposing swaps, no walls entered, no corner cut, at most one cell a step."""
    passable = passable_mask(result.codes)
    tracks, arrival = result.tracks, result.arrival_step
    for step in range(1, tracks.shape[0]):
        before, after = tracks[step - 1], tracks[step]
        present = (arrival < 0) | (
            arrival >= step
        )  # still walking at this step's start
        cells = [tuple(c) for c in after[present & ((arrival < 0) | (arrival > step))]]
        assert len(cells) == len(set(cells)), f"two walkers in one cell at step {step}"
        moves = {}
        for i in np.flatnonzero(present):
            (x0, y0), (x1, y1) = before[i], after[i]
            assert max(abs(x1 - x0), abs(y1 - y0)) <= 1
            assert passable[x1, y1], f"walker {i} in a wall at step {step}"
            if (
                x1 != x0 and y1 != y0
            ):  # a diagonal passes a corner, never through a wall
                assert passable[x1, y0] or passable[x0, y1], (
                    f"corner cut at step {step}"
                )
            if (x0, y0) != (x1, y1):
                moves[(x0, y0)] = (x1, y1)
        for a, b in moves.items():
            assert moves.get(b) != a or a == b, f"opposing swap at step {step}"


def test_rimea_1_free_walking_40_m_corridor():
    codes, start = corridor()
    result = walk(codes, [start])
    # 100 cells of 0.4 m at one cell per 1/3 s: 33.3 s (1.2 m/s)
    assert result.arrival_s[0] == pytest.approx(100 / 3)
    assert RIMEA_1_S[0] <= result.arrival_s[0] <= RIMEA_1_S[1]


@pytest.mark.parametrize("angle", [0.0, math.degrees(math.atan(0.5)), 90.0])
def test_rimea_1_rotated_within_the_range(angle):
    codes, start, target = rotated_corridor(angle)
    result = walk(codes, [start], exits=target)
    assert RIMEA_1_S[0] <= result.arrival_s[0] <= RIMEA_1_S[1], result.arrival_s


def test_rimea_1_at_45_degrees_is_too_fast_on_the_raster():
    # a diagonal step is 0.4 sqrt 2 = 0.57 m in the same 1/3 s (1.70 m/s): 40 m in about 71
    # steps, 23.6 s, below RiMEA's 26 s. The raster cannot express an isotropic free speed.
    codes, start, target = rotated_corridor(45.0)
    result = walk(codes, [start], exits=target)
    assert result.arrival_s[0] < RIMEA_1_S[0]
    assert result.arrival_s[0] == pytest.approx(
        40.0 / (0.4 * math.sqrt(2)) / 3, abs=0.5
    )


def test_rimea_6_corner_without_cutting_through_walls():
    codes, starts = corner()
    result = walk(codes, starts)
    assert (result.arrival_step > 0).all()
    _assert_engine_invariants(result)


def test_no_overlap_in_a_narrow_corridor_with_counterflow():
    rows = ["#" * 32, "E" + "." * 30 + "E", "E" + "." * 30 + "E", "#" * 32]
    codes = raster(rows)
    # walkers everywhere in the corridor head for the nearer end: two streams meet in the middle
    starts = [(x, y) for x in range(3, 29, 2) for y in (1, 2)]
    result = walk(codes, starts, max_steps=400)
    _assert_engine_invariants(result)
    assert (result.arrival_step > 0).sum() >= len(starts) // 2


def test_route_choice_between_two_exits_takes_the_nearer():
    rows = ["#" * 22] + ["E" + "." * 20 + "E"] + ["#" + "." * 20 + "#"] * 8 + ["#" * 22]
    codes = raster(rows)
    starts = [(x, 4) for x in (2, 5, 8, 13, 16, 19)]
    result = walk(codes, starts)
    assert (result.arrival_step > 0).all()
    final_x = result.tracks[-1][:, 0]
    assert final_x.tolist() == [0, 0, 0, 21, 21, 21]


def test_bottleneck_flow_against_the_cell_model_limits():
    flows = {w: bottleneck(w, walkers=100) for w in (1, 2, 4)}
    for width, flow in flows.items():
        # one walker per cell (6.25 /m^2) and one cell per step per lane: 3 /s per 0.4 m lane
        assert flow.max_density_per_m2 <= MAX_DENSITY_PER_M2 + 1e-9
        assert flow.flow_per_s <= 3.0 * width * 1.05
    assert flows[1].flow_per_s < flows[2].flow_per_s < flows[4].flow_per_s
    # a one-lane bottleneck runs at the raster's limit, 7.5 /(m s): about 4x the ~1.9 /(m s)
    # measured in laboratory bottlenecks (a raster model has no body contact to slow it)
    assert flows[1].specific_flow_per_m_s == pytest.approx(7.5, rel=0.05)


def test_weidmann_formula_against_its_own_numbers():
    assert weidmann_speed(0.0) == 1.34
    assert weidmann_speed(5.4) == 0.0
    densities = np.linspace(0.1, 5.3, 5201)
    flows = [d * weidmann_speed(d) for d in densities]
    k = int(np.argmax(flows))
    # Weidmann (1993): capacity 1.225 persons / (m s) at 1.75 persons / m^2
    assert densities[k] == pytest.approx(1.75, abs=0.02)
    assert flows[k] == pytest.approx(1.225, abs=0.005)


def test_speed_against_density_in_the_periodic_corridor():
    densities = [0.5, 1.0, 2.0, 4.0, 6.0]
    speeds = [ring_corridor_speed(d) for d in densities]
    # the engine moves a lane as a block (a follower enters the cell its leader leaves in the
    # same step), so the free speed holds to about 3 /m^2 and drops only near the jam; Weidmann
    # slows from the first pedestrian on. The raster does not express that part of the diagram.
    assert speeds[0] == pytest.approx(FREE_SPEED_M_S)
    assert speeds[2] == pytest.approx(FREE_SPEED_M_S, abs=0.02)
    assert all(a >= b - 1e-9 for a, b in itertools.pairwise(speeds))
    assert speeds[-1] < 0.8 * FREE_SPEED_M_S
    for density, speed in zip(densities[1:], speeds[1:], strict=True):
        assert speed > weidmann_speed(density)


def test_raster_refuses_bad_rows_and_angles():
    with pytest.raises(ValueError, match="row 2 has 2 cells"):
        raster(["###", "##"])
    with pytest.raises(ValueError, match="unknown glyph 'x'"):
        raster(["#x#"])
    with pytest.raises(ValueError, match="0-90"):
        rotated_corridor(120.0)
    assert raster(["#E", ".."])[1, 1] == Terrain.EXIT
