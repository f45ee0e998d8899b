import itertools
import math

import networkx as nx
import numpy as np
import pytest

from mesa_llm_mobility.evacuation.contexts import known_openings
from mesa_llm_mobility.evacuation.layers import BeliefWindow
from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.evacuation.plaza import Terrain, passable_mask
from mesa_llm_mobility.evacuation.routing import (
    GridGraph,
    OpeningAnchor,
    frontier_mask,
    path_to,
    route_options,
)


def grid_graph_nx(passable):
    width, height = passable.shape
    g = nx.DiGraph()
    g.add_nodes_from(
        (x, y) for x in range(width) for y in range(height) if passable[x, y]
    )
    for x in range(width):
        for y in range(height):
            if not passable[x, y]:
                continue
            for dx in (-1, 0, 1):
                for dy in (-1, 0, 1):
                    nx_, ny = x + dx, y + dy
                    if (
                        (dx, dy) == (0, 0)
                        or not (0 <= nx_ < width and 0 <= ny < height)
                        or not passable[nx_, ny]
                    ):
                        continue
                    if dx and dy and not (passable[x + dx, y] or passable[x, y + dy]):
                        continue
                    g.add_edge(
                        (x, y), (nx_, ny), weight=math.sqrt(2) if dx and dy else 1.0
                    )
    return g


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_shortest_paths_are_optimal_against_networkx(seed):
    rng = np.random.default_rng(seed)
    width, height = 17, 13
    raw = np.where(
        rng.random((width, height)) < 0.28, Terrain.TREE, Terrain.FLOOR
    ).astype(np.uint8)
    raw[0, 0] = Terrain.FLOOR
    graph = GridGraph(raw)
    passable = raw == Terrain.FLOOR
    dist, pred = graph.shortest_paths(passable.ravel(), 0)
    reference = nx.single_source_dijkstra_path_length(grid_graph_nx(passable), (0, 0))
    for x in range(width):
        for y in range(height):
            flat = x * height + y
            if (x, y) in reference:
                assert dist[flat] == pytest.approx(reference[(x, y)])
                path = path_to(pred, 0, flat)
                steps = [divmod(c, height) for c in [0, *path]]
                length = sum(math.dist(a, b) for a, b in itertools.pairwise(steps))
                assert length == pytest.approx(reference[(x, y)])
                assert all(
                    max(abs(a[0] - b[0]), abs(a[1] - b[1])) == 1
                    for a, b in itertools.pairwise(steps)
                )
            else:
                assert not np.isfinite(dist[flat])


def test_belief_mask_and_sinks_restrict_paths():
    raw = np.full((5, 3), Terrain.FLOOR, dtype=np.uint8)
    raw[2, 1] = Terrain.EXIT
    graph = GridGraph(raw)
    passable = np.ones(15, dtype=bool)
    sinks = np.zeros(15, dtype=bool)
    sinks[2 * 3 + 1] = True
    dist, pred = graph.shortest_paths(
        passable, 0 * 3 + 1, graph.weights_for(passable, sinks, 1)
    )
    path = path_to(pred, 1, 4 * 3 + 1)
    assert 2 * 3 + 1 not in path  # never crosses the opening
    assert path_to(pred, 1, 2 * 3 + 1)[-1] == 7  # but may end in it
    passable[[3 * 3 + 0, 3 * 3 + 1, 3 * 3 + 2]] = False  # unknown column
    dist, _ = graph.shortest_paths(passable, 1)
    assert not np.isfinite(dist[4 * 3 + 1])


def test_route_options_attributes():
    width, height = 30, 12
    raw = np.full((width, height), Terrain.FLOOR, dtype=np.uint8)
    raw[:, 0] = raw[:, -1] = Terrain.WALL
    raw[-1, 5:7] = Terrain.EXIT
    known = np.zeros((width, height), dtype=bool)
    known[:, :] = True
    known[:8, :] = False  # unknown west part -> frontier at x = 8
    passable = known & np.isin(raw, (Terrain.FLOOR, Terrain.EXIT))
    graph = GridGraph(raw)
    source = (15, 5)
    sinks = raw == Terrain.EXIT
    anchors = [OpeningAnchor("exit1", "exit", (width - 1) * height + 5)]
    visited = {16 * height + 5, 17 * height + 5}
    people = np.array([[20, 5]])
    threats = np.array([[15, 9]])
    options, dist = route_options(
        graph,
        passable,
        known,
        source,
        anchors,
        visited,
        people,
        threats,
        0.4,
        sinks=sinks,
    )
    exit_option = next(o for o in options if o.anchor_kind == "exit")
    assert exit_option.length_cells == 14
    assert exit_option.anchor_offset == (14, 0)
    assert exit_option.direction == "E"
    assert exit_option.reaches_anchor
    assert exit_option.familiarity == pytest.approx(2 / 14, abs=1e-3)
    assert exit_option.visible_people == 1
    assert exit_option.threat_clearance_m == pytest.approx(
        round(math.sqrt(17) * 0.4, 2)
    )  # from (16, 5)
    frontier = [o for o in options if o.anchor_kind == "frontier"]
    assert frontier and all(o.anchor_offset[0] == 8 - 15 for o in frontier)
    assert len([o for o in options if not o.alternative]) <= 4
    alternatives = [o for o in options if o.alternative]
    assert len(alternatives) <= 1
    for option in options:
        assert np.isfinite(dist[option.path[-1]])
        assert "cells" in option.describe()
    assert (
        frontier_mask(known, passable)[8, 5]
        and not frontier_mask(known, passable)[9, 5]
    )


def test_routes_in_the_belief_window_are_the_routes_over_the_whole_plaza():
    """The window search must give the same options, paths and reachability as the plaza's."""
    model = EvacuationModel(
        composition={"average": 40}, random_spawn=True, rng=5, time_limit_s=8
    )
    model.run()  # beliefs after the gates closed, with walked, irregular belief boxes
    whole = BeliefWindow.whole(model.plaza.width, model.plaza.height)
    compared = 0
    for agent in model.pedestrians:
        i = agent.index
        here = (int(model.crowd.pos[i, 0]), int(model.crowd.pos[i, 1]))
        results = []
        for window in (model.senses.belief.window(i, here), whole):
            codes = model.senses.belief.codes_in(i, window)
            _, anchors = known_openings(
                i, here, codes, window, model.senses.belief, model.scene, model.clock
            )
            options, dist = route_options(
                model.scene.graph,
                passable_mask(codes),
                codes != Terrain.UNKNOWN,
                here,
                anchors,
                agent.visited,
                np.array([[here[0] + 2, here[1]]]),
                np.array([[here[0], here[1] + 3]]),
                model.scene.cell_size_m,
                sinks=window.crop(model.scene.opening_mask),
                window=window,
            )
            reachable = np.zeros(model.plaza.raw.shape, dtype=bool)
            window.crop(reachable)[...] = np.isfinite(dist).reshape(codes.shape)
            results.append((options, reachable, window.n_cells))
        (small, small_reach, cells), (full, full_reach, all_cells) = results
        assert small == full
        assert np.array_equal(small_reach, full_reach)
        compared += cells < all_cells and bool(small)
    assert compared >= 10  # most windows are smaller than the plaza


@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (16, 8), (23, 40)])
def test_open_grid_is_the_graph_of_an_all_floor_raster(shape):
    """The slots marked as edges are the raster graph's edges; the others are infinite loops."""
    built = GridGraph.open_grid(*shape)
    reference = GridGraph(np.full(shape, Terrain.FLOOR, dtype=np.uint8))
    edges = built._grid_edges.ravel()
    assert edges.size == 8 * shape[0] * shape[1]
    for name in ("src", "dst", "weight", "orth_a", "orth_b"):
        assert np.array_equal(getattr(built, name)[edges], getattr(reference, name)), (
            name
        )
    assert np.array_equal(built.dst[~edges], built.src[~edges])  # loops
    assert np.isinf(built.weight[~edges]).all()
    assert np.array_equal(np.flatnonzero(edges)[reference.diagonal], built.diagonal)
    assert np.array_equal(built.diag_orth_a, reference.diag_orth_a)
    assert np.array_equal(built.diag_orth_b, reference.diag_orth_b)
    assert np.array_equal(built.indptr, 8 * np.arange(shape[0] * shape[1] + 1))


@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (16, 8), (23, 40)])
def test_open_grid_builds_its_slot_targets_only_when_asked(shape):
    """A window graph holds its edge flags only; its slots' targets come when first read."""
    built = GridGraph.open_grid(*shape)
    assert "indices" not in built.__dict__ and "src" not in built.__dict__
    assert built._grid_edges.nbytes == 8 * shape[0] * shape[1]  # one byte a slot
    reference = GridGraph(np.full(shape, Terrain.FLOOR, dtype=np.uint8))
    edges = built._grid_edges.ravel()
    assert np.array_equal(built.indices[edges], reference.dst)
    assert np.array_equal(
        built.indices[~edges], np.repeat(np.arange(edges.size // 8), 8)[~edges]
    )
    assert "src" not in built.__dict__  # the per-edge arrays still wait
    with pytest.raises(AttributeError):
        built.no_such_array  # noqa: B018


@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (16, 8), (23, 40)])
def test_open_grid_weights_equal_the_per_edge_rule(shape):
    """Shifted-grid weights of an open grid == the per-edge gathers of the raster's graph."""
    rng = np.random.default_rng(sum(shape))
    built = GridGraph.open_grid(*shape)
    reference = GridGraph(np.full(shape, Terrain.FLOOR, dtype=np.uint8))
    assert reference._grid_edges is None  # the reference takes the per-edge path
    edges = built._grid_edges.ravel()
    cells = shape[0] * shape[1]
    for density in (0.2, 0.6, 0.9, 1.0):
        passable = rng.random(cells) < density
        sinks = rng.random(cells) < 0.1
        source = int(rng.integers(cells))
        for args in ((), (sinks,), (sinks, source)):
            mine = built.weights_for(passable, *args)
            theirs = reference.weights_for(passable, *args)
            assert np.array_equal(mine[edges], theirs)
            assert np.isinf(mine[~edges]).all()
    assert np.isinf(mine).any() or cells == 1


@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (23, 40)])
def test_open_grid_closes_the_same_edges_as_the_per_edge_rule(shape):
    rng = np.random.default_rng(7 + sum(shape))
    built = GridGraph.open_grid(*shape)
    reference = GridGraph(np.full(shape, Terrain.FLOOR, dtype=np.uint8))
    edges = built._grid_edges.ravel()
    cells = shape[0] * shape[1]
    weights = built.weights_for(rng.random(cells) < 0.8)
    for density in (0.0, 0.1, 0.5):
        closed = rng.random(cells) < density
        mine = built.close_edges_into(weights, closed)
        assert np.array_equal(
            mine[edges], reference.close_edges_into(weights[edges], closed)
        )
        assert np.array_equal(mine, np.where(closed[built.dst], np.inf, weights))
        # by cells (with repeats) instead of a mask: the same, on both kinds of graph
        xs, ys = np.divmod(np.flatnonzero(closed).repeat(2), shape[1])
        assert np.array_equal(built.close_edges_into_cells(weights, xs, ys), mine)
        assert np.array_equal(
            reference.close_edges_into_cells(weights[edges], xs, ys), mine[edges]
        )
