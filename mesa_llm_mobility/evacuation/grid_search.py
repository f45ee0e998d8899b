"""Dijkstra on an open grid's eight steps a cell, compiled (Numba).

Route options search each pedestrian's belief window two or three times a decision, and a crowd
of 10,000 decides about 750 times a step late in a run, over windows of 10,000 cells and more:
the searches are most of a step. :func:`grid_search` searches a window graph
(:meth:`.routing.GridGraph.open_grid`) by the rule of :meth:`.routing.GridGraph.weights_for`,
stepping from the passable, sink and closed cells, and :func:`grid_shortest_paths` searches
given slot weights (cell ``c``'s step ``k`` of ``MOORE_STEPS`` is slot ``8 c + k``, ``inf`` for
no edge); neither builds a sparse matrix. Both settle cells in the order of scipy's
``dijkstra`` on that graph: scipy's lazy binary heap pops ``(distance, cell)`` entries the
smallest distance first and of equal distances the largest cell first, a cell's distance and
predecessor set by the first strictly shorter relaxation, in step order, and no relaxation
beyond ``limit``. Our queue is a ring of buckets (every step is at least 1 long, so a bucket is
complete when it is reached) sorted in that order, which pops the same entries in the same
order at about half the cost of the heap. The distances and predecessors are therefore
scipy's, cell for cell
(``tests/evacuation/test_grid_search.py`` compares them on random grids, sinks, limits and
closed corridors).

The search compiles on first use in a process (about a second; cached in ``__pycache__`` where
writable), never at import.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from mesa_llm_mobility.evacuation.plaza import MOORE_STEP_X, MOORE_STEP_Y

SQRT2 = math.sqrt(2.0)
"""Length of a diagonal step (cells)."""


BUCKETS_PER_CELL = 64
"""Buckets of the search's queue per unit of distance (a power of two: exact bucket indices)."""

RING_BUCKETS = 128
"""Buckets in the queue's ring: more than ``BUCKETS_PER_CELL * sqrt 2 + 1`` (the longest step)."""

NO_PREDECESSOR = -9999
"""Predecessor of the source and of unreached cells (scipy's value)."""


def grid_shortest_paths(
    weights: np.ndarray, width: int, height: int, source: int, limit: float
) -> tuple[np.ndarray, np.ndarray]:
    """Distances (float) and predecessors (int32) from ``source`` over open-grid slot weights.

    Args:
        weights: ``8 * width * height`` slot weights (``inf``: no edge).
        width: Grid width.
        height: Grid height.
        source: Flat start cell.
        limit: No cell farther than this is reached (``inf``: none).
    """
    empty = np.zeros(0, dtype=np.bool_)
    return _compiled()(
        np.ascontiguousarray(weights, dtype=np.float64),
        empty,
        empty,
        empty,
        width,
        height,
        int(source),
        float(limit),
    )


def grid_search(
    passable: np.ndarray,
    sinks: np.ndarray | None,
    closed: np.ndarray | None,
    width: int,
    height: int,
    source: int,
    limit: float = np.inf,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`grid_shortest_paths` over the weights the rule gives, computed step by step.

    The weights are those of :meth:`.routing.GridGraph.weights_for` ``(passable, sinks,
    source)`` with the edges into ``closed`` cells made infinite
    (:meth:`~.routing.GridGraph.close_edges_into_cells`): a step enters a passable cell that is
    not closed, a diagonal step needs one of its two orthogonal cells passable, and a sink other
    than ``source`` is not left. Without the weight array (eight floats a cell) a search costs
    what its cells do.

    Args:
        passable: Flat cells that may be entered (``source`` should be among them).
        sinks: Flat cells that may be entered but not left, or ``None``.
        closed: Flat cells never entered, or ``None``.
        width: Grid width.
        height: Grid height.
        source: Flat start cell.
        limit: No cell farther than this is reached.
    """
    empty = np.zeros(0, dtype=np.bool_)
    return _compiled()(
        np.zeros(0),
        np.ascontiguousarray(passable, dtype=np.bool_),
        empty if sinks is None else np.ascontiguousarray(sinks, dtype=np.bool_),
        empty if closed is None else np.ascontiguousarray(closed, dtype=np.bool_),
        width,
        height,
        int(source),
        float(limit),
    )


def path_cells(pred: np.ndarray, source: int, target: int) -> np.ndarray:
    """Flat cells from ``source`` (excluded) to ``target`` (included) along ``pred``, compiled.

    Empty when ``target`` is ``source`` or was not reached (a predecessor below 0 on the way).
    """
    if target == source:
        return np.zeros(0, dtype=np.int64)
    return _compiled_walk()(pred, int(source), int(target))


@functools.cache
def _compiled_walk():
    """:func:`_walk` compiled, once a process."""
    import numba  # noqa: PLC0415

    return numba.njit(cache=True, nogil=True)(_walk)


def _walk(pred, source, target):  # pragma: no cover
    """The cells of :func:`path_cells` (plain Python that Numba compiles)."""
    length = 0
    node = target
    while node != source:
        if node < 0:
            return np.zeros(0, dtype=np.int64)
        length += 1
        node = pred[node]
    cells = np.empty(length, dtype=np.int64)
    node = target
    for k in range(length - 1, -1, -1):
        cells[k] = node
        node = pred[node]
    return cells


@functools.cache
def _compiled():
    """:func:`_search` compiled, once a process (Numba imported only then)."""
    import numba  # noqa: PLC0415  (no import-time cost for models that never search)

    return numba.njit(cache=True, nogil=True)(_search)


def _search(
    weights, passable, sinks, closed, width, height, source, limit
):  # pragma: no cover
    """The search (plain Python that Numba compiles; see the module docstring).

    With ``weights`` (slot weights) it searches them; with an empty ``weights`` it computes
    each step's weight from ``passable``, ``sinks`` and ``closed`` (see :func:`grid_search`).

    The queue is a ring of buckets :data:`BUCKETS_PER_CELL` wide a unit of distance, each a
    linked list of entries. Every step is at least 1 long, so an entry pushed while a bucket is
    being settled lands at least :data:`BUCKETS_PER_CELL` buckets later: a bucket is complete
    when it is reached, its entries are sorted as the heap would pop them (smaller distance
    first, of equal distances the larger cell first) and settled in that order. The entries
    waiting at any time lie within sqrt 2 of the distance being settled, which the ring holds.
    """
    n = width * height
    by_weights = weights.size > 0
    has_sinks = sinks.size > 0
    has_closed = closed.size > 0
    step_x = MOORE_STEP_X
    step_y = MOORE_STEP_Y
    dist = np.full(n, np.inf)
    pred = np.full(n, NO_PREDECESSOR, dtype=np.int32)
    done = np.zeros(n, dtype=np.bool_)
    # an entry per strict improvement: at most one per edge, plus the source
    capacity = 8 * n + 1
    keys = np.empty(capacity, dtype=np.float64)
    cells = np.empty(capacity, dtype=np.int64)
    following = np.empty(capacity, dtype=np.int64)
    batch = np.empty(capacity, dtype=np.int64)
    ring = RING_BUCKETS
    head = np.full(ring, -1, dtype=np.int64)
    dist[source] = 0.0
    keys[0] = 0.0
    cells[0] = source
    following[0] = -1
    head[0] = 0
    entries = 1
    waiting = 1
    bucket = 0
    while waiting > 0:
        while head[bucket % ring] < 0:
            bucket += 1
        # take the bucket's entries and sort them: distance up, then cell down
        m = 0
        e = head[bucket % ring]
        head[bucket % ring] = -1
        while e >= 0:
            batch[m] = e
            m += 1
            e = following[e]
        waiting -= m
        for a in range(1, m):
            x = batch[a]
            b = a - 1
            while b >= 0 and (
                keys[batch[b]] > keys[x]
                or (keys[batch[b]] == keys[x] and cells[batch[b]] < cells[x])
            ):
                batch[b + 1] = batch[b]
                b -= 1
            batch[b + 1] = x
        for a in range(m):
            d = keys[batch[a]]
            u = cells[batch[a]]
            if done[u]:
                continue
            done[u] = True
            if not by_weights and has_sinks and sinks[u] and u != source:
                continue  # a sink is not left
            ux = u // height
            uy = u - ux * height
            for k in range(8):
                if by_weights:
                    w = weights[8 * u + k]
                    if w == np.inf:
                        continue
                    v = u + step_x[k] * height + step_y[k]
                else:
                    vx = ux + step_x[k]
                    vy = uy + step_y[k]
                    if vx < 0 or vx >= width or vy < 0 or vy >= height:
                        continue
                    v = vx * height + vy
                    if not passable[v] or (has_closed and closed[v]):
                        continue
                    if step_x[k] != 0 and step_y[k] != 0:
                        if not (
                            passable[vx * height + uy] or passable[ux * height + vy]
                        ):
                            continue
                        w = SQRT2
                    else:
                        w = 1.0
                nd = d + w
                if nd <= limit and nd < dist[v]:
                    dist[v] = nd
                    pred[v] = u
                    slot = np.int64(nd * BUCKETS_PER_CELL) % ring
                    keys[entries] = nd
                    cells[entries] = v
                    following[entries] = head[slot]
                    head[slot] = entries
                    entries += 1
                    waiting += 1
        bucket += 1
    return dist, pred
