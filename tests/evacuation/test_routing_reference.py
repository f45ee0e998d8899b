"""The fast route-option internals against plain references on random plazas and beliefs.

The window graphs' edge slots, the frontier by a separable dilation, the
alternative's first, tighter search and the options' attributes computed for all routes at
once must give exactly what the plain rules give.
"""

import math

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from mesa_llm_mobility.evacuation import routing
from mesa_llm_mobility.evacuation.layers import BeliefWindow
from mesa_llm_mobility.evacuation.plaza import MOORE_STEPS, Terrain
from mesa_llm_mobility.evacuation.routing import (
    GridGraph,
    OpeningAnchor,
    frontier_mask,
    route_options,
)


def plain_frontier(known, passable):
    width, height = known.shape
    out = np.zeros_like(known)
    for x in range(width):
        for y in range(height):
            out[x, y] = (
                known[x, y]
                and passable[x, y]
                and any(
                    0 <= x + dx < width
                    and 0 <= y + dy < height
                    and not known[x + dx, y + dy]
                    for dx, dy in MOORE_STEPS
                )
            )
    return out


@pytest.mark.parametrize("seed", range(4))
def test_frontier_mask_is_the_neighbour_rule(seed):
    rng = np.random.default_rng(seed)
    for shape in ((1, 1), (2, 7), (13, 9)):
        known = rng.random(shape) < rng.uniform(0.2, 1.0)
        passable = known & (rng.random(shape) < 0.8)
        assert np.array_equal(
            frontier_mask(known, passable), plain_frontier(known, passable)
        )


def random_case(rng):
    """A random plaza (walls, trees, an exit), a belief of part of it and a pedestrian."""
    width, height = int(rng.integers(12, 40)), int(rng.integers(12, 40))
    raw = np.where(
        rng.random((width, height)) < rng.uniform(0.05, 0.3),
        Terrain.TREE,
        Terrain.FLOOR,
    ).astype(np.uint8)
    raw[:, 0] = raw[:, -1] = raw[0, :] = raw[-1, :] = Terrain.WALL
    exit_y = int(rng.integers(1, height - 3))
    raw[-1, exit_y : exit_y + 2] = Terrain.EXIT
    source = (int(rng.integers(1, width - 1)), int(rng.integers(1, height - 1)))
    raw[source] = Terrain.FLOOR
    xs, ys = np.indices((width, height))
    reach = rng.uniform(6, 30)
    known = np.hypot(xs - source[0], ys - source[1]) <= reach
    known |= rng.random((width, height)) < 0.1
    passable = known & np.isin(raw, (Terrain.FLOOR, Terrain.EXIT))
    anchors = [
        OpeningAnchor("exit1", "exit", (width - 1) * height + exit_y + k)
        for k in (0, 1)
        if known[width - 1, exit_y + k]
    ]
    people = rng.integers(0, (width, height), size=(int(rng.integers(0, 12)), 2))
    threats = rng.integers(0, (width, height), size=(int(rng.integers(0, 3)), 2))
    visited = set(rng.integers(0, width * height, size=40).tolist())
    return raw, known, passable, source, anchors, visited, people, threats


def window_of(known, source, margin=1):
    width, height = known.shape
    xs, ys = np.nonzero(known)
    x_lo = max(0, min(xs.min(), source[0]) - margin)
    x_hi = min(width - 1, max(xs.max(), source[0]) + margin)
    y_lo = max(0, min(ys.min(), source[1]) - margin)
    y_hi = min(height - 1, max(ys.max(), source[1]) + margin)
    return BeliefWindow(x_lo, y_lo, x_hi - x_lo + 1, y_hi - y_lo + 1, height)


def options_of(case, graph, window, first_limit, monkeypatch):
    raw, known, passable = case[:3]
    monkeypatch.setattr(routing, "ALTERNATIVE_FIRST_LIMIT", first_limit)
    crop = (lambda a: a) if window is None else window.crop
    sinks = crop(raw == Terrain.EXIT)
    # source, anchors, visited, people and threats are in plaza coordinates
    rest = (*case[3:], 0.4)
    return route_options(
        graph, crop(passable), crop(known), *rest, sinks=sinks, window=window
    )


def plain_attributes(option, source, height, visited, people, threats):
    cells = [divmod(c, height) for c in option.path]
    along = sum(
        any(max(abs(px - x), abs(py - y)) <= 1 for x, y in cells) for px, py in people
    )
    clearance = None
    if len(threats):
        closest = min(
            (tx - x) ** 2 + (ty - y) ** 2 for x, y in cells for tx, ty in threats
        )
        clearance = round(math.sqrt(closest) * 0.4, 2)
    ax, ay = cells[-1]
    return {
        "anchor_offset": (ax - source[0], ay - source[1]),
        "length_cells": len(cells),
        "familiarity": round(sum(c in visited for c in option.path) / len(cells), 3),
        "visible_people": along,
        "threat_clearance_m": clearance,
        "reaches_anchor": len(cells) <= routing.COMMIT_CELLS,
    }


@pytest.mark.parametrize("seed", range(12))
def test_route_options_equal_the_plain_rules_on_random_plazas(seed, monkeypatch):
    rng = np.random.default_rng(100 + seed)
    plain_search = (1.0e9, 0.0)  # the alternative's first search never runs
    checked = alternatives = 0
    for _ in range(8):
        case = random_case(rng)
        raw, known, _passable, source, _anchors, visited, people, threats = case
        graph = GridGraph(raw)
        window = window_of(known, source)
        reference, ref_dist = options_of(case, graph, None, plain_search, monkeypatch)
        for win in (None, window):
            # default first limit, and one so tight that most alternatives search twice
            for first_limit in (routing.ALTERNATIVE_FIRST_LIMIT, (1.0, 0.0)):
                options, dist = options_of(case, graph, win, first_limit, monkeypatch)
                assert options == reference
                whole = np.full(raw.size, np.inf)
                local = np.arange(raw.size).reshape(raw.shape)
                crop = local if win is None else win.crop(local)
                whole[crop.ravel()] = dist
                assert np.array_equal(whole, ref_dist)
        for option in reference:
            for name, value in plain_attributes(
                option, source, raw.shape[1], visited, people, threats
            ).items():
                assert getattr(option, name) == value, name
        checked += len(reference)
        alternatives += sum(o.alternative for o in reference)
    assert checked >= 8 and alternatives >= 1


def test_window_searches_equal_fresh_matrices_search_after_search():
    """A window graph's slots search like the raster graph's edges, search after search."""
    rng = np.random.default_rng(3)
    graph = GridGraph.open_grid(21, 17)
    reference = GridGraph(np.full((21, 17), Terrain.FLOOR, dtype=np.uint8))
    edges = graph._grid_edges.ravel()
    n = graph.n_cells
    for _ in range(8):
        passable = rng.random(n) < 0.7
        source = int(rng.integers(n))
        passable[source] = True
        weights = graph.weights_for(passable)
        limit = float(rng.choice([np.inf, 8.0]))
        dist, pred = graph.shortest_paths(None, source, weights, limit=limit)
        fresh = csr_matrix(
            (weights[edges], reference.indices, reference.indptr), shape=(n, n)
        )
        want_dist, want_pred = dijkstra(
            fresh, indices=source, return_predecessors=True, limit=limit
        )
        assert np.array_equal(dist, want_dist)
        assert np.array_equal(pred, want_pred)
