"""The fast paths of perception and belief writes equal the plain pairwise rules.

Random plazas (random walls), random viewers and headings over several steps, some viewers
standing still, blocks of a few viewers: the belief store's known bits and boxes equal an OR
and a min/max over every pair, and the sightings equal the rule applied to every pair.
"""

from types import SimpleNamespace

import numpy as np
import pytest

from mesa_llm_mobility.evacuation.agents import ACTIVE, EVACUATED, REACHED
from mesa_llm_mobility.evacuation.evidence import sightings, sightings_of_pairs
from mesa_llm_mobility.evacuation.layers import BeliefStore
from mesa_llm_mobility.evacuation.perception import ViewGeometry, perceive
from mesa_llm_mobility.evacuation.plaza import Terrain, load_plaza


def random_plaza(rng):
    """The default plaza's layout with random extra walls inside (a new opaque grid)."""
    plaza = load_plaza(None)
    raw = plaza.raw.copy()
    walls = (raw == Terrain.FLOOR) & (rng.random(raw.shape) < 0.08)
    opaque = np.isin(raw, (Terrain.WALL, Terrain.TREE)) | walls
    return plaza, opaque


def walk(rng, xs, ys, headings, width, height):
    """Move about half the viewers one cell and turn some; the rest stand still."""
    moving = rng.random(xs.size) < 0.5
    xs = np.where(moving, np.clip(xs + rng.integers(-1, 2, xs.size), 0, width - 1), xs)
    ys = np.where(moving, np.clip(ys + rng.integers(-1, 2, ys.size), 0, height - 1), ys)
    turning = rng.random(xs.size) < 0.2
    headings = np.where(turning, rng.integers(0, 8, xs.size), headings)
    return xs, ys, headings


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_known_bits_and_boxes_equal_an_or_and_min_max_of_every_pair(seed):
    rng = np.random.default_rng(seed)
    plaza, opaque = random_plaza(rng)
    width, height = opaque.shape
    n_agents, n_viewers = 12, 9
    store = BeliefStore(plaza, n_agents)
    known = np.zeros((n_agents, width * height), dtype=bool)
    geometry = ViewGeometry.cone(6.0 + seed, 120.0)
    rows = np.sort(rng.choice(n_agents, n_viewers, replace=False))
    xs = rng.integers(0, width, n_viewers)
    ys = rng.integers(0, height, n_viewers)
    headings = rng.integers(0, 8, n_viewers)
    written = 0
    for step in range(8):
        if step:
            xs, ys, headings = walk(rng, xs, ys, headings, width, height)
        perc = perceive(geometry, opaque, xs, ys, headings)
        assert np.array_equal(
            perc.viewer, np.repeat(np.arange(n_viewers), np.diff(perc.start))
        )
        for v in range(n_viewers):
            assert np.array_equal(perc.cells_of(v), perc.cell[perc.viewer == v])
        store.observe_views(
            rows,
            np.column_stack([xs, ys, headings]),
            perc.start,
            perc.cell,
            opaque,
            step,
            plaza.raw,
        )
        known[rows[perc.viewer], perc.cell] = True  # the plain rule: every pair
        written += perc.cell.size
        every = np.arange(width * height)
        for agent in range(n_agents):
            assert np.array_equal(store.known(agent, every), known[agent])
            cells = np.flatnonzero(known[agent])
            if cells.size == 0:
                assert tuple(store.box[agent]) == (np.iinfo(np.int32).max, -1) * 2
                continue
            bx, by = np.divmod(cells, height)
            assert tuple(store.box[agent]) == (bx.min(), bx.max(), by.min(), by.max())
    assert written > 0


def test_viewer_of_pairs_is_the_viewer_array():
    rng = np.random.default_rng(5)
    _, opaque = random_plaza(rng)
    width, height = opaque.shape
    xs, ys = rng.integers(0, width, 20), rng.integers(0, height, 20)
    perc = perceive(
        ViewGeometry.cone(8.0, 120.0), opaque, xs, ys, rng.integers(0, 8, 20)
    )
    pairs = rng.integers(0, perc.cell.size, 500)
    assert np.array_equal(perc.viewer_of(pairs), perc.viewer[pairs])
    assert perc.n_viewers == 20 and perc.start[-1] == perc.cell.size


def pairwise_sightings(crowd, active, perc):
    """The rule on every (viewer, cell) pair, as evidence.observe applied it before."""
    shouting = np.array([a.shouting for a in crowd.pedestrians], dtype=bool)
    seen = crowd.occupancy.ravel()[perc.cell]
    return sightings_of_pairs(crowd, active[perc.viewer], seen, shouting)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_sightings_equal_the_pairwise_rule(seed):
    rng = np.random.default_rng(seed)
    _, opaque = random_plaza(rng)
    width, height = opaque.shape
    n = 60
    free = np.flatnonzero(~opaque.ravel())
    cells = rng.choice(free, n + 1, replace=False)  # pedestrians, then the adversary
    occupancy = np.full((width, height), -1, dtype=np.int64)
    occupancy.ravel()[cells] = np.arange(n + 1)
    status = rng.choice([ACTIVE, EVACUATED, REACHED], n, p=[0.7, 0.1, 0.2])
    crowd = SimpleNamespace(
        n_pedestrians=n,
        occupancy=occupancy,
        status=status,
        pedestrians=[SimpleNamespace(shouting=bool(s)) for s in rng.random(n) < 0.4],
    )
    active = np.flatnonzero(status == ACTIVE)
    xs, ys = np.divmod(cells[active], height)
    perc = perceive(
        ViewGeometry.cone(10.0, 120.0), opaque, xs, ys, rng.integers(0, 8, active.size)
    )
    fast = sightings(crowd, active, perc)
    plain = pairwise_sightings(crowd, active, perc)
    for mine, theirs in zip(fast, plain, strict=True):
        assert np.array_equal(mine, theirs)
    assert plain[2].sum() > 0  # the case is not empty: some fleeing neighbours are seen
