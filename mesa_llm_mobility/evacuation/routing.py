"""Routes on a passability mask: 8-neighbour shortest paths and the engine's route options.

Paths are optimal 8-neighbour paths (orthogonal step 1, diagonal step sqrt 2) with the paper's
corner rule (no diagonal between two blocked orthogonal cells). They are computed with a
single-source Dijkstra (``scipy.sparse.csgraph``, compiled) over a precomputed grid graph whose
edge weights are switched to infinity where the mask forbids them; one search serves every anchor
of a decision, which is what A* would answer anchor by anchor with an admissible heuristic.

Pedestrians route on their private belief (only observed, passable cells); the adversary routes on
the effective (physical) grid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from mesa_llm_mobility.evacuation.grid_search import (
    SQRT2,
    grid_search,
    grid_shortest_paths,
    path_cells,
)
from mesa_llm_mobility.evacuation.layers import BeliefWindow
from mesa_llm_mobility.evacuation.plaza import MOORE_STEPS, PASSABLE_CODES, Terrain

COMMIT_CELLS = 20
"""At most this many cells of a route are committed per decision (spec)."""

WINDOW_CACHE = 96
"""Window graphs kept for reuse, one per window shape (:meth:`GridGraph.window`)."""

ALTERNATIVE_FIRST_LIMIT = (1.1, 3.0)
"""The alternative route's first search stops at ``a * distance + b`` of the first route."""

STEP_WEIGHTS = np.array([SQRT2 if dx and dy else 1.0 for dx, dy in MOORE_STEPS])
"""Length of each step of ``MOORE_STEPS`` (cells)."""

_PER_EDGE_ARRAYS = frozenset(
    (
        "src",
        "dst",
        "weight",
        "orth_a",
        "orth_b",
        "diagonal",
        "diag_orth_a",
        "diag_orth_b",
    )
)

_SLOT_ARRAYS = frozenset(("indices", "indptr"))
"""The slot targets of an :meth:`GridGraph.open_grid` graph (built when first asked for)."""

COMPASS = ("E", "NE", "N", "NW", "W", "SW", "S", "SE")


def compass(dx: float, dy: float) -> str:
    """8-point compass name of the direction ``(dx, dy)`` (x east, y north)."""
    angle = math.degrees(math.atan2(dy, dx)) % 360.0
    return COMPASS[int(((angle + 22.5) % 360.0) // 45.0)]


def bearing_deg(dx: float, dy: float) -> float:
    """Compass bearing in degrees (0 = north, 90 = east) of the direction ``(dx, dy)``."""
    return (math.degrees(math.atan2(dx, dy)) + 360.0) % 360.0


class GridGraph:
    """The static 8-neighbour graph of all cells that can ever be passable.

    Attributes:
        width: Grid width.
        height: Grid height.
        src: Edge sources (flat cells), sorted.
        dst: Edge targets (flat cells).
        weight: 1 for orthogonal, sqrt 2 for diagonal edges.
        orth_a: For diagonal edges, the first orthogonal cell (``dst`` for orthogonal edges).
        orth_b: For diagonal edges, the second orthogonal cell (``dst`` for orthogonal edges).
        diagonal: Indices of the diagonal edges.
    """

    def __init__(self, raw_codes: np.ndarray) -> None:
        self.width, self.height = raw_codes.shape
        width, height = self.width, self.height
        candidate = np.isin(raw_codes, (*PASSABLE_CODES, Terrain.GATE_CLOSED))
        xs, ys = np.nonzero(candidate)
        sources, targets, weights, orth_a, orth_b = [], [], [], [], []
        for dx, dy in MOORE_STEPS:
            nx, ny = xs + dx, ys + dy
            ok = (nx >= 0) & (nx < width) & (ny >= 0) & (ny < height)
            ok[ok] &= candidate[nx[ok], ny[ok]]
            s = xs[ok] * height + ys[ok]
            t = nx[ok] * height + ny[ok]
            sources.append(s)
            targets.append(t)
            weights.append(np.full(s.size, SQRT2 if dx and dy else 1.0))
            if dx and dy:
                orth_a.append((xs[ok] + dx) * height + ys[ok])
                orth_b.append(xs[ok] * height + ys[ok] + dy)
            else:
                orth_a.append(t)
                orth_b.append(t)
        src = np.concatenate(sources)
        order = np.argsort(src, kind="stable")
        self._store(
            src[order],
            np.concatenate(targets)[order],
            np.concatenate(weights)[order],
            np.concatenate(orth_a)[order],
            np.concatenate(orth_b)[order],
        )

    @classmethod
    def open_grid(cls, width: int, height: int) -> GridGraph:
        """The graph of a ``width x height`` grid with every cell a candidate, in slots.

        Every cell has eight edge slots, one per step of ``MOORE_STEPS`` in that order (edge
        ``cell * 8 + k``); a slot whose step leaves the grid is a loop to the cell itself with
        weight ``inf``. A search never relaxes an infinite edge, so its distances and
        predecessors are those over the edges of ``GridGraph`` of an all-floor raster, which
        are the slots marked in ``_grid_edges`` (same order). Fixed slots let weights and
        closed corridors be computed per cell and step without gathering edges (window graphs
        are searched often).
        """
        graph = cls.__new__(cls)
        graph.width, graph.height = width, height
        steps = np.array(MOORE_STEPS)
        # (cell, step) -> whether that edge exists: a step stays inside along x and along y
        inside_x = (np.arange(width)[:, None] + steps[None, :, 0] >= 0) & (
            np.arange(width)[:, None] + steps[None, :, 0] < width
        )
        inside_y = (np.arange(height)[:, None] + steps[None, :, 1] >= 0) & (
            np.arange(height)[:, None] + steps[None, :, 1] < height
        )
        graph._grid_edges = (inside_x[:, None, :] & inside_y[None, :, :]).reshape(
            width * height, len(MOORE_STEPS)
        )
        # a search needs nothing more: weights come from the steps, and the slots' targets
        # (``indices``, ``indptr``) and the per-edge arrays of a raster graph are built only
        # if asked for (see __getattr__)
        graph._windows = {}
        return graph

    def __getstate__(self) -> dict[str, object]:
        """For a checkpoint: the graph without its cached window graphs (made again when asked)."""
        return {**self.__dict__, "_windows": {}}

    def __getattr__(self, name: str) -> np.ndarray:
        """The slot targets and per-edge arrays of an :meth:`open_grid` graph, built when asked.

        Searches of an open grid use none of them (only ``_grid_edges``); a window graph
        holds about 8 bytes a cell instead of about 280, which matters with dozens of cached
        window shapes of up to the whole plaza. Only attributes missing from a graph come here.
        """
        if "_grid_edges" not in self.__dict__ or name not in (
            _SLOT_ARRAYS | _PER_EDGE_ARRAYS
        ):
            raise AttributeError(name)
        width, height = self.width, self.height
        cells = np.arange(width * height)
        xs, ys = np.divmod(cells, height)
        steps = np.array(MOORE_STEPS)
        nx = xs[:, None] + steps[None, :, 0]
        ny = ys[:, None] + steps[None, :, 1]
        ok = self._grid_edges
        dst = np.where(ok, nx * height + ny, cells[:, None])  # off the frame: a loop
        if name in _SLOT_ARRAYS:
            self.indices = dst.ravel().astype(np.int32)
            self.indptr = (len(MOORE_STEPS) * np.arange(width * height + 1)).astype(
                np.int32
            )
        else:
            diagonal = (steps[:, 0] != 0) & (steps[:, 1] != 0)
            self._store(
                np.repeat(cells, len(MOORE_STEPS)),
                dst.ravel(),
                np.where(ok, STEP_WEIGHTS[None, :], np.inf).ravel(),
                np.where(
                    ok & diagonal[None, :], nx * height + ys[:, None], dst
                ).ravel(),
                np.where(
                    ok & diagonal[None, :], xs[:, None] * height + ny, dst
                ).ravel(),
            )
        return getattr(self, name)

    def _store(
        self,
        src: np.ndarray,
        dst: np.ndarray,
        weight: np.ndarray,
        orth_a: np.ndarray,
        orth_b: np.ndarray,
    ) -> None:
        width, height = self.width, self.height
        # int32 cells (the graph's size, and the window graphs it keeps, stay small)
        self.src = src.astype(np.int32)
        self.dst = dst.astype(np.int32)
        self.weight = weight
        self.orth_a = orth_a.astype(np.int32)
        self.orth_b = orth_b.astype(np.int32)
        self.diagonal = np.flatnonzero(self.orth_a != self.dst).astype(np.int32)
        self.diag_orth_a = self.orth_a[self.diagonal]
        self.diag_orth_b = self.orth_b[self.diagonal]
        self.indptr = np.searchsorted(self.src, np.arange(width * height + 1)).astype(
            np.int32
        )
        self.indices = self.dst
        self._windows: dict[tuple[int, int], GridGraph] = {}
        if not hasattr(self, "_grid_edges"):
            self._grid_edges: np.ndarray | None = None

    def window(self, window: BeliefWindow) -> GridGraph:
        """A graph for searches inside ``window``, in the window's local cell numbers.

        It is the full 8-neighbour graph of a ``window.width x window.height`` grid (cached by
        shape, in the edge slots of :meth:`open_grid`): the edges of this graph inside the
        window plus edges into cells that are never passable (walls, trees), in the same
        order. A mask makes those edges infinite, and a
        search skips infinite edges, so a search whose reachable cells all lie inside the
        window gives the same distances and predecessors as one over the plaza, at the cost
        of the window instead of the plaza.
        """
        shape = (window.width, window.height)
        graph = self._windows.pop(shape, None)
        if graph is None:
            graph = GridGraph.open_grid(*shape)
            if len(self._windows) >= WINDOW_CACHE:
                self._windows.pop(next(iter(self._windows)))  # the least recently used
        self._windows[shape] = graph
        return graph

    @property
    def n_cells(self) -> int:
        """Number of flat cells."""
        return self.width * self.height

    def weights_for(
        self,
        passable_flat: np.ndarray,
        sinks: np.ndarray | None = None,
        source: int | None = None,
    ) -> np.ndarray:
        """Edge weights under a passability mask (``inf`` for forbidden edges).

        Args:
            passable_flat: Flat mask of cells that may be entered.
            sinks: Flat mask of cells a path may end in but not pass through (openings: stepping
                on one leaves the plaza).
            source: Start cell, exempt from ``sinks``.
        """
        if self._grid_edges is not None:
            return self._open_grid_weights(passable_flat, sinks, source)
        # an impassable cell is never entered, so its out-edges need no check (the source is
        # made passable by callers); only diagonals need the corner rule
        allowed = passable_flat[self.dst]
        allowed[self.diagonal] &= (
            passable_flat[self.diag_orth_a] | passable_flat[self.diag_orth_b]
        )
        if sinks is not None:
            through = sinks[self.src]
            if source is not None:
                through &= self.src != source
            allowed &= ~through
        return np.where(allowed, self.weight, np.inf)

    def _open_grid_weights(
        self,
        passable_flat: np.ndarray,
        sinks: np.ndarray | None,
        source: int | None,
    ) -> np.ndarray:
        """:meth:`weights_for` of an :meth:`open_grid` graph from shifted views of the grid.

        The same rule edge by edge (the target may be entered; a diagonal needs one of its two
        orthogonal cells; a sink other than ``source`` is not left), computed per cell and step
        on the padded grid instead of by gathering cells per edge, then kept where the edge
        exists (the graph's edge order is cell-major, steps in ``MOORE_STEPS`` order).
        """
        width, height = self.width, self.height
        padded = np.zeros((width + 2, height + 2), dtype=bool)
        padded[1:-1, 1:-1] = passable_flat.reshape(width, height)
        allowed = np.empty((width, height, len(MOORE_STEPS)), dtype=bool)
        for k, (dx, dy) in enumerate(MOORE_STEPS):
            enter = padded[1 + dx : 1 + dx + width, 1 + dy : 1 + dy + height]
            if dx and dy:
                enter = enter & (
                    padded[1 + dx : 1 + dx + width, 1:-1]
                    | padded[1:-1, 1 + dy : 1 + dy + height]
                )
            allowed[:, :, k] = enter
        # slots of missing edges hold inf weights (and step off the frame: never allowed)
        weights = np.where(allowed, STEP_WEIGHTS, np.inf).ravel()
        if sinks is not None:
            through = np.flatnonzero(sinks)  # a few cells: their out-edge slots
            if source is not None:
                through = through[through != source]
            weights.reshape(width * height, len(MOORE_STEPS))[through] = np.inf
        return weights

    def close_edges_into(self, weights: np.ndarray, closed: np.ndarray) -> np.ndarray:
        """``weights`` with every edge into a ``closed`` cell (flat mask) made infinite."""
        if self._grid_edges is None:
            return np.where(closed[self.dst], np.inf, weights)
        width, height = self.width, self.height
        padded = np.zeros((width + 2, height + 2), dtype=bool)
        padded[1:-1, 1:-1] = closed.reshape(width, height)
        into = np.empty((width, height, len(MOORE_STEPS)), dtype=bool)
        for k, (dx, dy) in enumerate(MOORE_STEPS):
            into[:, :, k] = padded[1 + dx : 1 + dx + width, 1 + dy : 1 + dy + height]
        return np.where(into.ravel(), np.inf, weights)

    def close_edges_into_cells(
        self, weights: np.ndarray, xs: np.ndarray, ys: np.ndarray
    ) -> np.ndarray:
        """:meth:`close_edges_into` of the cells ``(xs, ys)`` (inside the grid; repeats allowed).

        An :meth:`open_grid` graph closes only the slots of the cells' in-edges (a few per
        closed cell) instead of passing over every edge.
        """
        if self._grid_edges is None:
            closed = np.zeros(self.n_cells, dtype=bool)
            closed[xs * self.height + ys] = True
            return self.close_edges_into(weights, closed)
        steps = np.asarray(MOORE_STEPS)
        # the edge of step k into (x, y) leaves (x - dx_k, y - dy_k), slot cell * 8 + k
        ux = xs[:, None] - steps[None, :, 0]
        uy = ys[:, None] - steps[None, :, 1]
        inside = (ux >= 0) & (ux < self.width) & (uy >= 0) & (uy < self.height)
        slots = (ux * self.height + uy) * len(MOORE_STEPS) + np.arange(len(MOORE_STEPS))
        closed = weights.copy()
        closed[slots[inside]] = np.inf
        return closed

    def search(
        self,
        passable_flat: np.ndarray,
        sinks: np.ndarray | None,
        source: int,
        closed: np.ndarray | None = None,
        limit: float = np.inf,
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`shortest_paths` over :meth:`weights_for` ``(passable_flat, sinks, source)``.

        ``closed`` (flat mask) cells are never entered (:meth:`close_edges_into`). An open grid
        searches without a weight array (:func:`~.grid_search.grid_search`), with the same
        distances and predecessors.
        """
        if self._grid_edges is not None:
            return grid_search(
                passable_flat, sinks, closed, self.width, self.height, source, limit
            )
        weights = self.weights_for(passable_flat, sinks, source)
        if closed is not None:
            weights = self.close_edges_into(weights, closed)
        return self.shortest_paths(None, source, weights, limit=limit)

    def shortest_paths(
        self,
        passable_flat: np.ndarray | None,
        source: int,
        weights: np.ndarray | None = None,
        limit: float = np.inf,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Distances (cells, diagonal = sqrt 2) and predecessors from ``source`` (flat).

        Args:
            passable_flat: Flat mask of cells that may be entered (unused when ``weights``
                is given).
            source: Flat start cell (need not be passable itself).
            weights: Precomputed :meth:`weights_for` result, to reuse across searches.
            limit: Stop the search beyond this distance (farther cells stay at ``inf``).
        """
        if weights is None:
            weights = self.weights_for(passable_flat)
        if self._grid_edges is not None:  # an open grid's slots: the compiled search
            return grid_shortest_paths(weights, self.width, self.height, source, limit)
        # a matrix per search (about 10 us), not one shared and refilled: safe across threads
        graph = csr_matrix(
            (weights, self.indices, self.indptr), shape=(self.n_cells, self.n_cells)
        )
        dist, pred = dijkstra(
            graph,
            directed=True,
            indices=int(source),
            return_predecessors=True,
            limit=limit,
        )
        return dist, pred


def path_to(pred: np.ndarray, source: int, target: int) -> list[int]:
    """Flat cells from ``source`` (excluded) to ``target`` (included); empty when unreachable."""
    return path_cells(pred, source, target).tolist()


def frontier_mask(known: np.ndarray, passable: np.ndarray) -> np.ndarray:
    """Known passable cells with at least one unknown Moore neighbour (``[x, y]`` masks)."""
    # the unknown cells dilated by one cell (3 x 3, a separable maximum; cells off the grid are
    # not unknown); the cell itself counts too, which changes nothing for a known cell
    unknown = ~known
    rows = unknown.copy()
    rows[1:] |= unknown[:-1]
    rows[:-1] |= unknown[1:]
    near_unknown = rows.copy()
    near_unknown[:, 1:] |= rows[:, :-1]
    near_unknown[:, :-1] |= rows[:, 1:]
    return known & passable & near_unknown


@dataclass(frozen=True)
class RouteOption:
    """One engine-computed route option (paper Sec. 2.3.2).

    Attributes:
        route_id: ``"R1"``, ``"R2"``...
        anchor_kind: ``"exit"``, ``"gate"`` or ``"frontier"`` (edge of explored space).
        opening_id: The opening the route leads to, for exit and gate anchors.
        anchor_offset: Anchor relative to the pedestrian, ``(dx east, dy north)`` in cells.
        direction: 8-point compass direction of the anchor.
        length_cells: Cells (steps) of the whole route to the anchor.
        familiarity: Fraction of route cells the pedestrian already walked.
        visible_people: Visible pedestrians within one cell of the route.
        threat_clearance_m: Closest approach of the route to any visible A or D (``None``: none visible).
        reaches_anchor: Whether the 20-cell horizon reaches the anchor.
        alternative: The corridor-distinct alternative to the nearest anchor.
        path: The route's flat cells (engine use; not shown to the decision maker).
    """

    route_id: str
    anchor_kind: str
    opening_id: str | None
    anchor_offset: tuple[int, int]
    direction: str
    length_cells: int
    familiarity: float
    visible_people: int
    threat_clearance_m: float | None
    reaches_anchor: bool
    alternative: bool = False
    path: tuple[int, ...] = field(default=(), repr=False)

    def describe(self) -> str:
        """One prompt line with every attribute."""
        target = (
            f"{self.anchor_kind} {self.opening_id}"
            if self.opening_id
            else "frontier (edge of what you know)"
        )
        clearance = (
            "no A or D visible"
            if self.threat_clearance_m is None
            else f"passes {self.threat_clearance_m:.1f} m from A/D"
        )
        reach = (
            "reaches it within 20 cells"
            if self.reaches_anchor
            else "only advances toward it (20-cell horizon)"
        )
        alt = ", corridor-distinct alternative" if self.alternative else ""
        return (
            f"{self.route_id}: to {target} at offset ({self.anchor_offset[0]:+d}, {self.anchor_offset[1]:+d}) {self.direction}, "
            f"{self.length_cells} cells, familiarity {self.familiarity:.0%}, {self.visible_people} people along it, {clearance}, {reach}{alt}"
        )


@dataclass(frozen=True)
class OpeningAnchor:
    """A known opening offered as an anchor: id, kind and the flat cell to aim for."""

    opening_id: str
    kind: str
    cell: int


@dataclass(frozen=True)
class RoutePaths:
    """The routes of :func:`route_options` before their attributes (what the searches decide).

    Attributes:
        routes: ``(anchor kind, opening id, path)`` per route, the path in flat cells of the
            search's window (the alternative last, when there is one).
        alternative: Whether the last route is the corridor-distinct alternative.
    """

    routes: tuple[tuple[str, str | None, tuple[int, ...]], ...]
    alternative: bool


def route_options(
    graph: GridGraph,
    passable: np.ndarray,
    known: np.ndarray,
    source: tuple[int, int],
    openings: list[OpeningAnchor],
    visited: set[int],
    people: np.ndarray,
    threats: np.ndarray,
    cell_size_m: float,
    max_options: int = 4,
    sinks: np.ndarray | None = None,
    window: BeliefWindow | None = None,
) -> tuple[list[RouteOption], np.ndarray]:
    """Up to ``max_options`` routes to known openings and frontier cells, plus an alternative.

    The routes come from :func:`route_paths` (the searches) and their attributes from
    :func:`describe_routes` (the people, threats and cells walked along them).

    Args:
        graph: The static grid graph of the plaza.
        passable: ``[x, y]`` believed passable cells (observed and passable when seen).
        known: ``[x, y]`` observed cells.
        source: The pedestrian's cell.
        openings: Known, believed-usable openings with the cell to aim for.
        visited: Flat cells the pedestrian already walked (familiarity).
        people: ``(k, 2)`` visible pedestrians' cells.
        threats: ``(m, 2)`` visible A and D cells.
        cell_size_m: Cell size for clearances.
        max_options: Options before the corridor-distinct alternative.
        sinks: ``[x, y]`` cells routes may end in but not cross (openings); never frontier anchors.
        window: The part of the plaza that ``passable``, ``known``, ``sinks`` and the returned
            distances cover (``None``: all of it); it must hold every known cell and
            ``source`` with a margin of one cell, so the routes are those over the plaza.
            Everything else (``source``, anchors, people, threats, visited, the routes' paths)
            is in plaza coordinates.

    Returns:
        The options and the distance array from ``source`` (flat over ``window``, ``inf`` when
        unreachable), which the validator reuses for target offsets.
    """
    paths, dist = route_paths(
        graph, passable, known, source, openings, window, max_options, sinks
    )
    if window is None:
        window = BeliefWindow.whole(graph.width, graph.height)
    options = describe_routes(
        paths, source, visited, people, threats, cell_size_m, window
    )
    return options, dist


def route_paths(
    graph: GridGraph,
    passable: np.ndarray,
    known: np.ndarray,
    source: tuple[int, int],
    openings: list[OpeningAnchor],
    window: BeliefWindow | None = None,
    max_options: int = 4,
    sinks: np.ndarray | None = None,
) -> tuple[RoutePaths, np.ndarray]:
    """The routes of :func:`route_options` and the distances of its search from ``source``.

    They depend on nothing but the arguments (the believed map inside ``window``, the cell, the
    anchors), so the same arguments always give the same routes. Arguments as in
    :func:`route_options`.
    """
    if window is None:
        window = BeliefWindow.whole(graph.width, graph.height)
    else:
        graph = graph.window(window)
    source = (source[0] - window.x0, source[1] - window.y0)
    local_cells = window.to_local([a.cell for a in openings]).tolist()
    openings = [
        OpeningAnchor(a.opening_id, a.kind, cell)
        for a, cell in zip(openings, local_cells, strict=True)
    ]
    height = graph.height
    flat_pass = passable.ravel().copy()
    src = source[0] * height + source[1]
    flat_pass[src] = True
    flat_sinks = None if sinks is None else sinks.ravel()
    dist, pred = graph.search(flat_pass, flat_sinks, src)
    candidates: list[tuple[float, str, str | None, int]] = []
    for anchor in openings:
        if np.isfinite(dist[anchor.cell]):
            candidates.append(
                (float(dist[anchor.cell]), anchor.kind, anchor.opening_id, anchor.cell)
            )
    candidates.sort(key=lambda c: c[0])
    chosen = (
        candidates[: max(0, max_options - 1)]
        if len(candidates) >= max_options
        else candidates
    )
    frontier_cells = (
        frontier_mask(known, passable).ravel() & np.isfinite(dist) & (dist >= 6.0)
    )
    if flat_sinks is not None:
        frontier_cells &= ~flat_sinks
    frontier = np.flatnonzero(frontier_cells)
    if frontier.size:
        fx, fy = np.divmod(frontier, height)
        sector = (
            np.round(np.arctan2(fy - source[1], fx - source[0]) / (np.pi / 4)).astype(
                int
            )
        ) % 8
        # per sector, the frontier cell closest to the 20-cell commitment horizon (the first
        # of equals: a stable sort by sector, then closeness)
        order = np.lexsort((np.abs(dist[frontier] - COMMIT_CELLS), sector))
        by_sector = sector[order]
        starts = np.ones(by_sector.size, dtype=bool)
        starts[1:] = by_sector[1:] != by_sector[:-1]
        firsts = order[starts]
        nearest_horizon = frontier[firsts]
        best = sorted(
            zip(dist[nearest_horizon].tolist(), nearest_horizon.tolist(), strict=True)
        )
        angles = [
            math.atan2(c[3] % height - source[1], c[3] // height - source[0])
            for c in chosen
        ]
        for d, k in best:
            if len(chosen) >= max_options:
                break
            angle = math.atan2(k % height - source[1], k // height - source[0])
            if any(
                abs((angle - a + math.pi) % (2 * math.pi) - math.pi) < math.pi / 3
                for a in angles
            ):
                continue
            chosen.append((d, "frontier", None, k))
            angles.append(angle)
    routes: list[tuple[str, str | None, tuple[int, ...]]] = []
    for _d, kind, opening_id, cell in chosen:
        path = path_to(pred, src, cell)
        if path:
            routes.append((kind, opening_id, tuple(path)))
    alternative: list[int] = []
    if routes:
        # the nearest (first of the shortest) route's corridor-distinct alternative
        nearest_kind, nearest_id, nearest_path = min(routes, key=lambda r: len(r[2]))
        alternative = _alternative(
            graph,
            flat_pass,
            flat_sinks,
            src,
            nearest_path,
            height,
            float(dist[nearest_path[-1]]),
        )
        if alternative:
            routes.append((nearest_kind, nearest_id, tuple(alternative)))
    return RoutePaths(tuple(routes), bool(alternative)), dist


@dataclass(frozen=True, eq=False)
class RouteCells:
    """The cells of a :class:`RoutePaths`' routes, route after route, in its window's ``x, y``.

    Route ``k`` is ``xs[starts[k]:ends[k]], ys[...]``. What the attribute pass of
    :func:`describe_routes` reads; kept with an answer, it serves every later answer with the
    same routes (:meth:`.route_planner.RouteSolver.redescribe`).
    """

    flat: np.ndarray
    xs: np.ndarray
    ys: np.ndarray
    starts: np.ndarray
    ends: np.ndarray

    @classmethod
    def of(cls, paths: RoutePaths, window: BeliefWindow) -> RouteCells:
        """The cells of ``paths`` (searched in ``window``)."""
        lengths = [len(path) for _kind, _id, path in paths.routes]
        flat = np.concatenate([path for _kind, _id, path in paths.routes])
        starts = np.cumsum([0, *lengths[:-1]])
        xs, ys = np.divmod(flat, window.height)
        return cls(flat, xs, ys, starts, starts + lengths)


def describe_routes(
    paths: RoutePaths,
    source: tuple[int, int],
    visited: set[int],
    people: np.ndarray,
    threats: np.ndarray,
    cell_size_m: float,
    window: BeliefWindow,
) -> list[RouteOption]:
    """The options of :func:`route_paths`' routes: ``R1``, ``R2``... in order, with attributes.

    Arguments in plaza coordinates, as in :func:`route_options`. The attributes of all routes
    come from one pass over their cells together (:func:`_route_attributes`). The last route is
    marked as the corridor-distinct alternative when ``paths`` has one.
    """
    routes = paths.routes
    if not routes:
        return []
    cells = RouteCells.of(paths, window)
    plaza_cells = window.to_plaza(cells.flat).tolist()
    plaza_paths = [
        tuple(plaza_cells[start:end])
        for start, end in zip(cells.starts.tolist(), cells.ends.tolist(), strict=True)
    ]
    familiarity, along, clearances = _route_attributes(
        cells, plaza_paths, visited, people, threats, cell_size_m, window
    )
    options = []
    source = (source[0] - window.x0, source[1] - window.y0)
    for k, (kind, opening_id, path) in enumerate(routes):
        ax, ay = divmod(path[-1], window.height)
        dx, dy = ax - source[0], ay - source[1]
        options.append(
            RouteOption(
                route_id=f"R{k + 1}",
                anchor_kind=kind,
                opening_id=opening_id,
                anchor_offset=(dx, dy),
                direction=compass(dx, dy),
                length_cells=len(path),
                familiarity=familiarity[k],
                visible_people=along[k],
                threat_clearance_m=clearances[k],
                reaches_anchor=len(path) <= COMMIT_CELLS,
                alternative=paths.alternative and k == len(routes) - 1,
                path=plaza_paths[k],
            )
        )
    return options


def redescribe_routes(
    earlier: tuple[RouteOption, ...],
    cells: RouteCells,
    visited: set[int],
    people: np.ndarray,
    threats: np.ndarray,
    cell_size_m: float,
    window: BeliefWindow,
) -> list[RouteOption]:
    """:func:`describe_routes` of the routes of ``earlier`` (options of the same search).

    Only the attributes that depend on people, threats and cells walked are computed again;
    the rest is the earlier options' (the same routes from the same cell).
    """
    if not earlier:
        return []
    familiarity, along, clearances = _route_attributes(
        cells,
        [option.path for option in earlier],
        visited,
        people,
        threats,
        cell_size_m,
        window,
    )
    return [
        RouteOption(
            route_id=option.route_id,
            anchor_kind=option.anchor_kind,
            opening_id=option.opening_id,
            anchor_offset=option.anchor_offset,
            direction=option.direction,
            length_cells=option.length_cells,
            familiarity=familiarity[k],
            visible_people=along[k],
            threat_clearance_m=clearances[k],
            reaches_anchor=option.reaches_anchor,
            alternative=option.alternative,
            path=option.path,
        )
        for k, option in enumerate(earlier)
    ]


def _route_attributes(
    cells: RouteCells,
    plaza_paths: list[tuple[int, ...]],
    visited: set[int],
    people: np.ndarray,
    threats: np.ndarray,
    cell_size_m: float,
    window: BeliefWindow,
) -> tuple[list[float], list[int], list[float | None]]:
    """Each route's familiarity, people along it and clearance from the closest A or D.

    People within one cell (Chebyshev) of a route and the closest visible threat are counted
    for all routes in one compiled pass (:func:`_crowding`); a route's familiarity is the share
    of its cells already walked (a path never repeats a cell: the intersection).
    """
    origin = np.array([window.x0, window.y0])
    n_routes = len(plaza_paths)
    along = np.zeros(n_routes, dtype=np.int64)
    closest = np.empty(n_routes)
    threats = threats - origin
    _compiled_crowding()(
        cells.xs,
        cells.ys,
        cells.starts,
        cells.ends,
        people - origin,
        threats,
        along,
        closest,
    )
    clearances: list[float | None] = [None] * n_routes
    if len(threats):
        clearances = [
            round(float(np.sqrt(c)) * cell_size_m, 2) for c in closest.tolist()
        ]
    familiarity = [
        round(len(visited.intersection(path)) / len(path), 3) for path in plaza_paths
    ]
    return familiarity, along.tolist(), clearances


def _alternative(
    graph: GridGraph,
    passable_flat: np.ndarray,
    sinks: np.ndarray | None,
    src: int,
    path: list[int],
    height: int,
    distance: float,
) -> list[int]:
    """A path to the same anchor avoiding the corridor (Chebyshev 1) around the first path's middle.

    The search is the main search's (``passable_flat``, ``sinks``) with the corridor's cells
    closed, and stops beyond three times the first path's length. ``distance`` is the first
    path's.

    A search stopped at a smaller limit gives the same distance and predecessor to every cell
    within that limit (Dijkstra settles them in the same order; only pushes beyond the limit
    are skipped), so a first search stops just beyond the first path's distance
    (:data:`ALTERNATIVE_FIRST_LIMIT`), which holds almost every alternative in fewer cells, and
    only when the anchor is not within it the search runs again to the full limit.
    """
    if len(path) < 6:
        return []
    middle = np.asarray(path[2:-2])
    mx, my = np.divmod(middle, height)
    steps = np.array(((0, 0), *MOORE_STEPS))
    cx = (mx[:, None] + steps[None, :, 0]).ravel()
    cy = (my[:, None] + steps[None, :, 1]).ravel()
    ok = (cx >= 0) & (cx < graph.width) & (cy >= 0) & (cy < height)
    cells = cx * height + cy
    ok &= (cells != src) & (cells != path[-1])
    closed = np.zeros(graph.n_cells, dtype=bool)
    closed[cells[ok]] = True
    limit = 3.0 * len(path) + 10.0
    first = ALTERNATIVE_FIRST_LIMIT[0] * distance + ALTERNATIVE_FIRST_LIMIT[1]
    alternative = []
    if first < limit:
        _, pred = graph.search(passable_flat, sinks, src, closed, limit=first)
        alternative = path_to(pred, src, path[-1])
    if not alternative:
        _, pred = graph.search(passable_flat, sinks, src, closed, limit=limit)
        alternative = path_to(pred, src, path[-1])
    if not alternative or len(set(alternative) & set(path)) > len(path) // 2:
        return []
    return alternative


@cache
def _compiled_crowding():
    """:func:`_crowding` compiled, once a process (Numba imported only then)."""
    import numba  # noqa: PLC0415  (no import-time cost)

    return numba.njit(cache=True, nogil=True)(_crowding)


def _crowding(px, py, starts, ends, people, threats, along, closest):
    """The crowding of each route: visible people along it and its closest threat.

    Route ``k`` has the cells ``starts[k]:ends[k]`` of ``px, py``; into ``along[k]`` go the
    people within one cell (Chebyshev) of any of its cells, into ``closest[k]`` the smallest
    squared distance from a threat to one of its cells (``inf`` without threats).
    """
    for k in range(starts.size):
        count = 0
        for p in range(people.shape[0]):
            x, y = people[p, 0], people[p, 1]
            for c in range(starts[k], ends[k]):
                if abs(x - px[c]) <= 1 and abs(y - py[c]) <= 1:
                    count += 1
                    break
        along[k] = count
        best = np.inf
        for c in range(starts[k], ends[k]):
            for t in range(threats.shape[0]):
                dx = threats[t, 0] - px[c]
                dy = threats[t, 1] - py[c]
                best = min(best, float(dx * dx + dy * dy))
        closest[k] = best
