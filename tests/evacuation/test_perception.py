import math

import numpy as np
import pytest

from mesa_llm_mobility.evacuation.ascii_view import render_view
from mesa_llm_mobility.evacuation.perception import (
    RepeatedViews,
    ViewGeometry,
    perceive,
)
from mesa_llm_mobility.evacuation.plaza import MOORE_STEPS, Terrain


def reference_visible(opaque, x0, y0, heading, radius, cone_deg):
    """Brute force: every cell tested one by one against Eq. (1) and Eq. (2)."""
    width, height = opaque.shape
    hx, hy = MOORE_STEPS[heading]
    out = {(x0, y0)}
    for x in range(width):
        for y in range(height):
            dx, dy = x - x0, y - y0
            if (dx, dy) == (0, 0):
                continue
            if max(abs(dx), abs(dy)) == 1:
                out.add((x, y))
                continue
            if dx * dx + dy * dy > radius * radius:
                continue
            cos = (dx * hx + dy * hy) / (math.hypot(dx, dy) * math.hypot(hx, hy))
            if cos < math.cos(math.radians(cone_deg / 2)) - 1e-9:
                continue
            if los(opaque, x0, y0, dx, dy):
                out.add((x, y))
    return out


def los(opaque, x0, y0, dx, dy):
    """Walk the chain toward the viewer: round(d (n-1)/n), halves away from zero."""
    while max(abs(dx), abs(dy)) > 1:
        n = max(abs(dx), abs(dy))
        px = int(math.copysign(math.floor(abs(dx * (n - 1) / n) + 0.5), dx))
        py = int(math.copysign(math.floor(abs(dy * (n - 1) / n) + 0.5), dy))
        x, y = x0 + px, y0 + py
        if not (0 <= x < opaque.shape[0] and 0 <= y < opaque.shape[1]) or opaque[x, y]:
            return False
        dx, dy = px, py
    return True


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fov_and_los_match_brute_force_on_random_maps(seed):
    rng = np.random.default_rng(seed)
    opaque = rng.random((23, 19)) < 0.18
    radius, cone = 9.0, 120.0
    geometry = ViewGeometry.cone(radius, cone)
    xs = rng.integers(0, 23, size=12)
    ys = rng.integers(0, 19, size=12)
    headings = rng.integers(0, 8, size=12)
    perception = perceive(geometry, opaque, xs, ys, headings)
    for k in range(12):
        got = {divmod(int(c), 19) for c in perception.cells_of(k)}
        assert got == reference_visible(
            opaque, int(xs[k]), int(ys[k]), int(headings[k]), radius, cone
        )


def test_square_initial_observation_ignores_heading_but_not_walls():
    opaque = np.zeros((9, 9), dtype=bool)
    opaque[4, 2:7] = True  # wall east of the viewer at x = 4
    perception = perceive(
        ViewGeometry.square(3), opaque, np.array([2]), np.array([4]), np.array([4])
    )
    got = {divmod(int(c), 9) for c in perception.cells_of(0)}
    assert (4, 4) in got  # the wall is seen
    assert (5, 4) not in got  # but hides what is behind it
    assert (0, 4) in got and (
        2,
        1,
    ) in got  # behind and beside: no cone in the initial observation
    assert all(max(abs(x - 2), abs(y - 4)) <= 3 for x, y in got)


def test_ascii_view_glyphs_north_up_and_unknown():
    width, height = 5, 4
    codes = np.full((width, height), Terrain.FLOOR, dtype=np.uint8)
    codes[0, :] = Terrain.WALL
    codes[4, 1] = Terrain.EXIT
    codes[2, 3] = Terrain.GATE_CLOSED
    codes[3, 2] = Terrain.TREE
    cells = [x * height + y for x in range(5) for y in range(4) if (x, y) != (4, 3)]
    view, origin = render_view(
        np.array(cells),
        height,
        codes.ravel(),
        (1, 1),
        {3 * height + 1: "p", 2 * height + 2: "A", 2 * height: "D"},
    )
    assert origin == (0, 3)
    assert view.split("\n") == ["#.X.?", "#.AT.", "#@.pE", "#.D.."]


def vectorised_reference(geometry, opaque, xs, ys, headings):
    """The perception as numpy computed it before it was compiled: ring by ring, per heading."""
    width, height = opaque.shape
    r = geometry.radius_cells
    padded_height = height + 2 * r
    padded = np.ones((width + 2 * r, padded_height), dtype=bool)
    padded[r : r + width, r : r + height] = opaque
    blocked_at = padded.ravel()
    plaza_cell = np.full(padded.shape, -1, dtype=np.int64)
    plaza_cell[r : r + width, r : r + height] = np.arange(width * height).reshape(
        width, height
    )
    plaza_at = plaza_cell.ravel()
    per_viewer = np.ones(xs.size, dtype=np.int64)
    seen_by_group = []
    for h in range(8):
        sel = np.flatnonzero(headings == h)
        if sel.size == 0:
            continue
        group = geometry.groups[h]
        here = (xs[sel] + r) * padded_height + ys[sel] + r
        at = here[:, None] + (group.dx * padded_height + group.dy)[None, :]
        blocked = blocked_at[at]
        seen = np.empty(blocked.shape, dtype=bool)
        for start, stop in group.rings:
            parents = group.parent[start:stop]
            if parents[0] < 0:
                seen[:, start:stop] = True
            else:
                seen[:, start:stop] = seen[:, parents] & ~blocked[:, parents]
        cells = plaza_at[at]
        visible = seen & group.in_view[None, :] & (cells >= 0)
        counts = np.count_nonzero(visible, axis=1)
        per_viewer[sel] += counts
        seen_by_group.append((sel, counts, cells[visible]))
    first = np.cumsum(per_viewer) - per_viewer
    cell = np.empty(int(per_viewer.sum()), dtype=np.int64)
    cell[first] = xs * height + ys
    for sel, counts, cells in seen_by_group:
        row_start = np.cumsum(counts) - counts
        cell[np.repeat(first[sel] + 1 - row_start, counts) + np.arange(cells.size)] = (
            cells
        )
    return cell, np.append(first, cell.size)


@pytest.mark.parametrize("seed", range(6))
def test_compiled_perception_keeps_every_cell_and_its_order(seed):
    """The compiled loop gives the vectorised version's arrays exactly (order included)."""
    rng = np.random.default_rng(seed)
    width, height = rng.integers(8, 60, size=2)
    opaque = rng.random((width, height)) < rng.uniform(0.0, 0.4)
    n = int(rng.integers(1, 200))
    xs = rng.integers(0, width, size=n)
    ys = rng.integers(0, height, size=n)
    headings = rng.integers(0, 8, size=n)
    for geometry in (
        ViewGeometry.cone(float(rng.uniform(2.0, 30.0)), float(rng.uniform(60, 200))),
        ViewGeometry.square(int(rng.integers(1, 5))),
    ):
        perception = perceive(geometry, opaque, xs, ys, headings)
        cell, start = vectorised_reference(geometry, opaque, xs, ys, headings)
        np.testing.assert_array_equal(perception.cell, cell)
        np.testing.assert_array_equal(perception.start, start)


def test_repeated_views_equal_a_fresh_perception_every_step():
    """Rows that keep their viewpoint get copied cells; rows come and go; the grid changes."""
    rng = np.random.default_rng(7)
    width, height = 40, 30
    opaque = rng.random((width, height)) < 0.15
    geometry = ViewGeometry.cone(8.0, 120.0)
    rows = 60
    views = RepeatedViews(geometry, rows)
    xs = rng.integers(0, width, size=rows)
    ys = rng.integers(0, height, size=rows)
    headings = rng.integers(0, 8, size=rows)
    copied = 0
    last = None
    for step in range(30):
        moving = rng.random(rows) < 0.3
        xs = np.where(moving, np.clip(xs + rng.integers(-1, 2, rows), 0, width - 1), xs)
        ys = np.where(
            moving, np.clip(ys + rng.integers(-1, 2, rows), 0, height - 1), ys
        )
        headings = np.where(rng.random(rows) < 0.1, rng.integers(0, 8, rows), headings)
        if step == 15:
            opaque = opaque.copy()
            opaque[10:20, 5] = ~opaque[
                10:20, 5
            ]  # a gate changes: nothing may be copied
        active = np.flatnonzero(rng.random(rows) < 0.8)
        got = views.perceive(opaque, active, xs[active], ys[active], headings[active])
        fresh = perceive(geometry, opaque, xs[active], ys[active], headings[active])
        np.testing.assert_array_equal(got.cell, fresh.cell)
        np.testing.assert_array_equal(got.start, fresh.start)
        # the last call's perception is still intact (two buffers used in turn)
        if last is not None:
            np.testing.assert_array_equal(last[0].cell, last[1].cell)
        last = (got, fresh)
        copied += views.copied
    assert copied > 0
