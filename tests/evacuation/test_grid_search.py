"""The compiled grid search gives scipy's distances and predecessors, cell for cell."""

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from mesa_llm_mobility.evacuation.grid_search import (
    grid_search,
    grid_shortest_paths,
    path_cells,
)
from mesa_llm_mobility.evacuation.routing import GridGraph


def scipy_search(graph, weights, source, limit):
    n = graph.n_cells
    matrix = csr_matrix((weights, graph.indices, graph.indptr), shape=(n, n))
    return dijkstra(
        matrix, directed=True, indices=source, return_predecessors=True, limit=limit
    )


def random_searches(seed):
    """Random open grids with passable cells, sinks, closed corridors and limits.

    Yields ``(graph, passable, sinks, source, closed, weights, limit)``: ``closed`` is a cell
    mask or ``None``, ``weights`` the rule's slot weights with the corridor closed.
    """
    rng = np.random.default_rng(seed)
    width, height = (int(v) for v in rng.integers(1, 60, size=2))
    graph = GridGraph.open_grid(width, height)
    n = graph.n_cells
    for _ in range(6):
        passable = rng.random(n) < rng.choice([0.4, 0.7, 0.95, 1.0])
        sinks = rng.random(n) < rng.choice([0.0, 0.02, 0.2])
        source = int(rng.integers(n))
        passable[source] = True
        sinks[source] |= rng.random() < 0.3  # a source on a sink is left all the same
        weights = graph.weights_for(passable, sinks, source)
        closed = None
        if (
            rng.random() < 0.5
        ):  # a closed corridor, as the alternative route's search has
            xs = rng.integers(0, width, size=int(rng.integers(1, 30)))
            ys = rng.integers(0, height, size=xs.size)
            weights = graph.close_edges_into_cells(weights, xs, ys)
            closed = np.zeros(n, dtype=bool)
            closed[xs * height + ys] = True
        limit = float(rng.choice([np.inf, 3.0, 10.0, 17.5, 40.0]))
        yield graph, passable, sinks, source, closed, weights, limit


@pytest.mark.parametrize("seed", range(30))
def test_distances_and_predecessors_are_scipys(seed):
    """The search of given slot weights == scipy's on the same graph."""
    for graph, _passable, _sinks, source, _closed, weights, limit in random_searches(
        seed
    ):
        dist, pred = grid_shortest_paths(
            weights, graph.width, graph.height, source, limit
        )
        ref_dist, ref_pred = scipy_search(graph, weights, source, limit)
        assert np.array_equal(dist, ref_dist)  # exact floats, inf where unreached
        assert np.array_equal(pred, ref_pred)
        assert pred.dtype == ref_pred.dtype


def test_ties_take_scipys_predecessors_on_an_open_floor():
    """An all-floor grid has many equal-length paths: the predecessors must still agree."""
    graph = GridGraph.open_grid(45, 38)
    passable = np.ones(graph.n_cells, dtype=bool)
    for source in (0, 17, 45 * 38 // 2 + 3, 45 * 38 - 1):
        weights = graph.weights_for(passable, None, source)
        dist, pred = grid_shortest_paths(weights, 45, 38, source, np.inf)
        ref_dist, ref_pred = scipy_search(graph, weights, source, np.inf)
        assert np.array_equal(dist, ref_dist) and np.array_equal(pred, ref_pred)


@pytest.mark.parametrize("seed", range(30))
def test_the_masked_search_is_the_search_of_the_rules_weights(seed):
    """Passable cells, sinks and closed cells give the weights_for / close_edges search."""
    for graph, passable, sinks, source, closed, weights, limit in random_searches(
        100 + seed
    ):
        ref_dist, ref_pred = scipy_search(graph, weights, source, limit)
        no_sinks = (
            None if not sinks.any() else sinks
        )  # no sinks: the mask may be left out
        for masks in ((sinks, closed), (no_sinks, closed)):
            dist, pred = grid_search(
                passable, *masks, graph.width, graph.height, source, limit
            )
            assert np.array_equal(dist, ref_dist) and np.array_equal(pred, ref_pred)


def walked_back(pred, source, target):
    """The path by the definition: predecessors from ``target`` back to ``source``."""
    path, node = [], int(target)
    if node == source:
        return []
    while node != source:
        if node < 0:
            return []
        path.append(node)
        node = int(pred[node])
    return path[::-1]


@pytest.mark.parametrize("seed", range(6))
def test_compiled_paths_walk_the_predecessors_back(seed):
    """Every cell's path, unreached cells and the source itself included, as walked in Python."""
    for graph, passable, sinks, source, closed, _weights, limit in random_searches(
        seed
    ):
        _, pred = grid_search(
            passable, sinks, closed, graph.width, graph.height, source, limit
        )
        for target in range(graph.n_cells):
            cells = path_cells(pred, source, target)
            assert cells.dtype == np.int64
            assert cells.tolist() == walked_back(pred, source, target)
