"""The belief store (bit-packed cells, opening steps, boxes) and belief windows."""

import numpy as np
import pytest

from mesa_llm_mobility.evacuation.layers import BeliefStore, BeliefWindow
from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.evacuation.perception import ViewGeometry, perceive
from mesa_llm_mobility.evacuation.plaza import Terrain, load_plaza


@pytest.fixture(scope="module")
def plaza():
    return load_plaza(None)


def dense_reference(plaza, n, observations):
    """The n x cells step array the store replaced, filled from the same observations."""
    seen = np.full((n, plaza.raw.size), -1, dtype=np.int64)
    gate_code = {}
    for agents, cells, step, codes in observations:
        seen[agents, cells] = step
        for a, c in zip(agents.tolist(), cells.tolist(), strict=True):
            if plaza.raw.ravel()[c] == Terrain.GATE_OPEN:
                gate_code[a, c] = int(codes.ravel()[c])
    return seen, gate_code


def test_store_answers_what_the_dense_step_array_did(plaza):
    rng = np.random.default_rng(3)
    n, cells = 7, plaza.raw.size
    store = BeliefStore(plaza, n)
    codes = plaza.raw.copy()
    observations = []
    for step in range(6):
        if step == 3:  # gates close between observations
            codes[plaza.raw == Terrain.GATE_OPEN] = Terrain.GATE_CLOSED
        agents = np.sort(rng.integers(0, n, 400))
        flat = rng.integers(0, cells, 400)
        flat[:40] = rng.choice(np.flatnonzero(plaza.opening_index.ravel() >= 0), 40)
        order = np.argsort(agents, kind="stable")
        agents, flat = agents[order], flat[order]
        store.observe(agents, flat, step, codes)
        observations.append((agents, flat, step, codes.copy()))
    seen, gate_code = dense_reference(plaza, n, observations)
    height = plaza.height
    every = np.arange(cells)
    for i in range(n):
        assert np.array_equal(store.known(i, every), seen[i] >= 0)
        assert all(store.knows(i, c) == (seen[i, c] >= 0) for c in range(0, cells, 97))
        openings = store.opening_flat
        assert np.array_equal(store.last_seen(i, openings), seen[i, openings])
        xs, ys = np.divmod(np.flatnonzero(seen[i] >= 0), height)
        assert tuple(store.box[i]) == (xs.min(), xs.max(), ys.min(), ys.max())
        whole = BeliefWindow.whole(plaza.width, plaza.height)
        believed = store.codes_in(i, whole).ravel()
        expected = np.where(seen[i] >= 0, plaza.raw.ravel(), Terrain.UNKNOWN)
        for (a, c), code in gate_code.items():
            if a == i:
                expected[c] = code
        assert np.array_equal(believed, expected)
        window = store.window(i, (int(xs[0]), int(ys[0])))
        assert window.width % 16 == 0 or window.width == plaza.width
        assert np.array_equal(
            store.codes_in(i, window), window.crop(expected.reshape(plaza.raw.shape))
        )
    agents = np.arange(n)
    assert np.array_equal(store.known(agents, openings), seen[:, openings] >= 0)


def test_window_holds_the_box_with_a_margin_and_maps_cells_both_ways(plaza):
    store = BeliefStore(plaza, 1)
    height = plaza.height
    store.observe(
        np.array([0, 0]), np.array([10 * height + 12, 14 * height + 15]), 0, plaza.raw
    )
    window = store.window(0, (20, 13))
    assert window.x0 <= 9 and window.x0 + window.width > 21
    assert window.y0 <= 11 and window.y0 + window.height > 16
    cells = window.plaza_cells().ravel()
    assert np.array_equal(window.to_plaza(np.arange(window.n_cells)), cells)
    assert np.array_equal(window.to_local(cells), np.arange(window.n_cells))
    assert window.to_local(0) == -1
    assert np.all(np.diff(cells) > 0)  # local order is plaza order


def _store_arrays(store):
    return (store._known_bits, store.opening_seen_step, store.gate_seen, store.box)


def test_skipped_repeat_views_leave_the_store_as_writing_every_pair(plaza):
    """Viewers that stand still and keep their heading are skipped; turning, moving or a new
    opaque grid is written, and the store equals one that wrote every pair every step."""
    geometry = ViewGeometry.cone(6.0, 120.0)
    rows = np.array([0, 2, 3])
    xs, ys = np.array([10, 12, 14]), np.array([10, 12, 8])
    headings = np.array([0, 2, 4])
    opaque = np.isin(plaza.raw, (Terrain.WALL,))
    skipping, every_pair = BeliefStore(plaza, 4), BeliefStore(plaza, 4)
    viewer_of = {agent: v for v, agent in enumerate(rows.tolist())}
    script = [
        (0, 0, 0, False),  # first look: all three
        (0, 0, 0, False),  # nobody moved: nothing written
        (1, 0, 0, False),  # viewer 0 stepped east
        (0, 0, 1, False),  # viewer 3 turned
        (0, 0, 0, True),  # another opaque grid: all three again
    ]
    expected_written = [[0, 2, 3], [], [0], [3], [0, 2, 3]]
    for step, (dx0, _, turn, new_grid) in enumerate(script):
        xs[0] += dx0
        headings[2] = (headings[2] + turn) % 8
        if new_grid:
            opaque = opaque.copy()
            opaque[0, 0] = not opaque[0, 0]
        perc = perceive(geometry, opaque, xs, ys, headings)
        codes = plaza.raw.copy()
        if step >= 2:
            codes[plaza.raw == Terrain.GATE_OPEN] = Terrain.GATE_CLOSED
        before = skipping.pairs_written
        skipping.observe_views(
            rows,
            np.column_stack([xs, ys, headings]),
            perc.start,
            perc.cell,
            opaque,
            step,
            codes,
        )
        assert skipping.pairs_written - before == sum(
            perc.cells_of(viewer_of[agent]).size for agent in expected_written[step]
        )
        every_pair.observe(rows[perc.viewer], perc.cell, step, codes)
        for mine, theirs in zip(
            _store_arrays(skipping), _store_arrays(every_pair), strict=True
        ):
            assert np.array_equal(mine, theirs)


def test_a_walked_crowd_believes_the_same_with_repeat_views_skipped(monkeypatch):
    def run():
        model = EvacuationModel(composition="H", block=3, rng=2, time_limit_s=20)
        return model.run()

    pairs = {"perceived": 0}
    real_views = BeliefStore.observe_views

    def counting_views(self, rows, viewpoints, starts, flat_cells, *rest):
        pairs["perceived"] += flat_cells.size
        real_views(self, rows, viewpoints, starts, flat_cells, *rest)

    monkeypatch.setattr(BeliefStore, "observe_views", counting_views)
    skipping = run()
    written = skipping.senses.belief.pairs_written
    assert 0 < written < pairs["perceived"]  # pedestrians that stood still: skipped

    def write_every_pair(self, rows, viewpoints, starts, flat_cells, *rest):
        pair_viewer = np.repeat(np.arange(rows.size), np.diff(starts))
        self.observe(rows[pair_viewer], flat_cells, rest[1], rest[2])

    monkeypatch.setattr(BeliefStore, "observe_views", write_every_pair)
    every_pair = run()
    for mine, theirs in zip(
        _store_arrays(skipping.senses.belief),
        _store_arrays(every_pair.senses.belief),
        strict=True,
    ):
        assert np.array_equal(mine, theirs)
    assert np.array_equal(skipping.crowd.pos, every_pair.crowd.pos)
