"""Verification scenarios for the pedestrian world (RiMEA and Juelich tests on the 0.4 m raster).

Classic pedestrian simulators are verified with the RiMEA test cases and the Juelich verification
list. These scenarios run the evacuation model's own movement engine
(:func:`~mesa_llm_mobility.evacuation.movement.resolve_moves`: one cell per step of 1/3 s, one
entity per cell, random winner, sidesteps, no swaps, no corner cutting) and its routing graph
(:class:`~mesa_llm_mobility.evacuation.routing.GridGraph`) on small rasters, with walkers that
know the map and follow their shortest route to an exit (re-planned when a move is refused):

- :func:`corridor` / :func:`rotated_corridor`: RiMEA test 1, 40 m free walking (26-34 s);
- :func:`corner`: RiMEA test 6, turning a corner without passing through the walls;
- :func:`walk`: any raster, with :attr:`WalkResult.tracks` to check overlaps and swaps;
- :func:`bottleneck`: flow through a bottleneck against the cell model's limits;
- :func:`ring_corridor_speed` and :func:`weidmann_speed`: speed against density (Weidmann's
  fundamental diagram) in a periodic corridor.

The tests in ``tests/evacuation/test_validation.py`` and ``docs/evacuation.md`` say which of them
the raster passes and which it cannot express.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mesa_llm_mobility.evacuation.movement import MOVED, STAY, resolve_moves
from mesa_llm_mobility.evacuation.plaza import Terrain, passable_mask
from mesa_llm_mobility.evacuation.routing import GridGraph, path_to
from mesa_llm_mobility.evacuation.timing import DT_S

CELL_M = 0.4
MAX_DENSITY_PER_M2 = 1.0 / CELL_M**2
"""One pedestrian per 0.4 m x 0.4 m cell: 6.25 per square metre."""

FREE_SPEED_M_S = CELL_M / DT_S
"""One orthogonal cell per step of 1/3 s: 1.2 m/s."""

WEIDMANN_V0_M_S = 1.34
WEIDMANN_GAMMA_M2 = 1.913
WEIDMANN_RHO_MAX_M2 = 5.4

_GLYPHS = {"#": Terrain.WALL, ".": Terrain.FLOOR, "E": Terrain.EXIT, "T": Terrain.TREE}


def raster(rows: Sequence[str]) -> np.ndarray:
    """Terrain codes ``[x, y]`` from map rows (north up): ``#`` wall, ``.`` floor, ``E`` exit, ``T`` tree."""
    height = len(rows)
    width = len(rows[0])
    codes = np.zeros((width, height), dtype=np.uint8)
    for row_number, row in enumerate(rows):
        if len(row) != width:
            raise ValueError(
                f"map row {row_number + 1} has {len(row)} cells, expected {width}"
            )
        for x, glyph in enumerate(row):
            if glyph not in _GLYPHS:
                raise ValueError(
                    f"map row {row_number + 1}, column {x + 1}: unknown glyph {glyph!r}"
                )
            codes[x, height - 1 - row_number] = _GLYPHS[glyph]
    return codes


@dataclass(frozen=True)
class WalkResult:
    """What :func:`walk` returns.

    Attributes:
        arrival_step: Per walker, the step at which it stepped onto an exit (``-1``: never).
        tracks: ``(steps + 1, n, 2)`` cells per step (a walker stays on its exit cell after
            arriving, but no longer occupies it).
        steps: Steps simulated.
        codes: The raster.
    """

    arrival_step: np.ndarray
    tracks: np.ndarray
    steps: int
    codes: np.ndarray

    @property
    def arrival_s(self) -> np.ndarray:
        """Arrival times in seconds (NaN: never)."""
        return np.where(self.arrival_step >= 0, self.arrival_step * DT_S, np.nan)


def walk(
    codes: np.ndarray,
    starts: Sequence[tuple[int, int]],
    *,
    max_steps: int = 2000,
    seed: int = 0,
    exits: np.ndarray | None = None,
) -> WalkResult:
    """Walkers follow their shortest route to the nearest exit through the movement engine.

    Args:
        codes: Terrain ``[x, y]``.
        starts: Start cells (distinct, passable).
        max_steps: Step limit.
        seed: Seed of the movement engine's random order and sidesteps.
        exits: ``[x, y]`` mask of target cells (default: the exit cells).

    Returns:
        Arrival steps and tracks.
    """
    width, height = codes.shape
    graph = GridGraph(codes)
    passable = passable_mask(codes)
    exits = codes == Terrain.EXIT if exits is None else exits
    exit_flat = np.flatnonzero(exits.ravel())
    n = len(starts)
    pos = np.array(starts, dtype=np.int64).reshape(n, 2)
    occupancy = np.full((width, height), -1, dtype=np.int64)
    for i, (x, y) in enumerate(pos.tolist()):
        if not passable[x, y] or occupancy[x, y] >= 0:
            raise ValueError(f"start cell {(x, y)} is blocked or taken")
        occupancy[x, y] = i
    rng = np.random.default_rng(seed)
    active = np.ones(n, dtype=bool)
    arrival = np.full(n, -1, dtype=np.int64)
    routes: list[list[int]] = [[] for _ in range(n)]
    tracks = [pos.copy()]

    def plan(i: int) -> list[int]:
        source = int(pos[i, 0]) * height + int(pos[i, 1])
        free = passable.ravel().copy()
        weights = graph.weights_for(free, sinks=exits.ravel(), source=source)
        dist, pred = graph.shortest_paths(None, source, weights=weights)
        target = int(exit_flat[np.argmin(dist[exit_flat])])
        return path_to(pred, source, target)

    step = 0
    while active.any() and step < max_steps:
        proposals = pos.copy()
        for i in np.flatnonzero(active).tolist():
            if not routes[i]:
                routes[i] = plan(i)
            if routes[i]:
                proposals[i] = divmod(routes[i][0], height)
        result = resolve_moves(pos, proposals, active, passable, occupancy, rng)
        for i in np.flatnonzero(active).tolist():
            if result.status[i] == MOVED:
                routes[i].pop(0)
            elif result.status[i] != STAY:
                routes[i] = []  # a sidestep or a refused move: plan again from here
        pos = result.positions
        step += 1
        for i in np.flatnonzero(active).tolist():
            if exits[pos[i, 0], pos[i, 1]]:
                active[i] = False
                arrival[i] = step
                occupancy[pos[i, 0], pos[i, 1]] = -1
        tracks.append(pos.copy())
    return WalkResult(arrival, np.array(tracks), step, codes)


def corridor(
    length_m: float = 40.0, width_m: float = 2.0
) -> tuple[np.ndarray, tuple[int, int]]:
    """RiMEA 1: a straight corridor, walls around, the exit across its east end.

    Returns:
        The raster and the start cell (west end, middle lane): the walker crosses ``length_m``.
    """
    cells = round(length_m / CELL_M)
    lanes = round(width_m / CELL_M)
    rows = ["#" * (cells + 2)]
    rows += ["#" + "." * cells + "E" for _ in range(lanes)]
    rows += ["#" * (cells + 2)]
    return raster(rows), (1, 1 + lanes // 2)


def rotated_corridor(
    angle_deg: float, length_m: float = 40.0, width_m: float = 2.0
) -> tuple[np.ndarray, tuple[int, int], np.ndarray]:
    """RiMEA 1 on a rotated geometry: the corridor's axis at ``angle_deg`` (0-90) from east.

    The floor is every cell whose centre lies within ``width_m / 2`` of the axis and between its
    two ends; the cells at the far end (``length_m`` along the axis, to half a cell) are the
    target.

    Raises:
        ValueError: For an angle outside 0-90 degrees.

    Returns:
        The raster, the start cell (on the axis at its start) and the target mask.
    """
    if not 0 <= angle_deg <= 90:
        raise ValueError(f"angle_deg must be 0-90, got {angle_deg}")
    theta = math.radians(angle_deg)
    ux, uy = math.cos(theta), math.sin(theta)
    margin = 4
    span = length_m / CELL_M
    width = int(abs(ux) * span + width_m / CELL_M) + 2 * margin
    height = int(abs(uy) * span + width_m / CELL_M) + 2 * margin
    ox, oy = (
        margin + width_m / CELL_M / 2 * abs(uy),
        margin + width_m / CELL_M / 2 * abs(ux),
    )
    xs, ys = np.meshgrid(np.arange(width), np.arange(height), indexing="ij")
    along = (xs - ox) * ux + (ys - oy) * uy
    across = -(xs - ox) * uy + (ys - oy) * ux
    half = width_m / CELL_M / 2
    inside = (np.abs(across) <= half) & (along >= -0.5)
    floor = inside & (along < span - 0.5)
    target = inside & (along >= span - 0.5) & (along < span + 1.0)
    codes = np.full((width, height), Terrain.WALL, dtype=np.uint8)
    codes[floor] = Terrain.FLOOR
    codes[target] = Terrain.EXIT
    start = (round(ox), round(oy))
    return codes, start, target


def corner(
    leg_m: float = 12.0, width_m: float = 2.0
) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """RiMEA 6: an L-shaped corridor turning left; 20 walkers in the first leg, exit at the end of the second.

    Returns:
        The raster and 20 start cells.
    """
    leg = round(leg_m / CELL_M)
    lanes = round(width_m / CELL_M)
    size = leg + lanes + 2
    rows = []
    for r in range(size):
        y = size - 1 - r
        row = []
        for x in range(size):
            in_first = 1 <= y <= lanes and 1 <= x <= leg + lanes
            in_second = leg + 1 <= x <= leg + lanes and 1 <= y <= size - 2
            if y == size - 1 and leg + 1 <= x <= leg + lanes:
                row.append("E")
            elif in_first or in_second:
                row.append(".")
            else:
                row.append("#")
        rows.append("".join(row))
    codes = raster(rows)
    starts = [(x, y) for x in range(1, 5) for y in range(1, lanes + 1)][:20]
    return codes, starts


def bottleneck_room(
    width_cells: int, room_cells: int = 20, neck_cells: int = 5
) -> np.ndarray:
    """A square room, a bottleneck of ``width_cells`` lanes and ``neck_cells`` long, exit beyond."""
    total_h = room_cells + 2
    mid = total_h // 2
    lo = mid - width_cells // 2
    rows = []
    for r in range(total_h):
        y = total_h - 1 - r
        row = ["#"]
        row += ["." if 1 <= y <= room_cells else "#" for _ in range(room_cells)]
        in_neck = lo <= y < lo + width_cells
        row += ["." if in_neck else "#" for _ in range(neck_cells)]
        row.append("E" if in_neck else "#")
        rows.append("".join(row))
    return raster(rows)


@dataclass(frozen=True)
class BottleneckFlow:
    """Flow through a bottleneck.

    Attributes:
        width_m: Bottleneck width.
        flow_per_s: Pedestrians leaving per second (steady state: between the 10th and the
            10th-last arrival).
        specific_flow_per_m_s: ``flow_per_s / width_m``.
        max_density_per_m2: Largest occupancy of any 2 x 2 m window at any step, per m^2.
    """

    width_m: float
    flow_per_s: float
    specific_flow_per_m_s: float
    max_density_per_m2: float


def bottleneck(width_cells: int, walkers: int = 150, seed: int = 0) -> BottleneckFlow:
    """Fill the room of :func:`bottleneck_room` with ``walkers`` and measure the outflow."""
    codes = bottleneck_room(width_cells)
    floor = [
        (int(x), int(y))
        for x, y in zip(*np.nonzero(codes == Terrain.FLOOR), strict=True)
        if x <= 20
    ]
    rng = np.random.default_rng(seed)
    chosen = [floor[k] for k in rng.choice(len(floor), size=walkers, replace=False)]
    result = walk(codes, chosen, seed=seed, max_steps=5000)
    times = np.sort(result.arrival_s[~np.isnan(result.arrival_s)])
    lo, hi = 10, len(times) - 10
    flow = (
        (hi - lo) / (times[hi] - times[lo])
        if hi > lo and times[hi] > times[lo]
        else math.nan
    )
    width_m = width_cells * CELL_M
    window = 5  # 5 cells = 2 m
    densest = 0
    for frame, done in zip(result.tracks, _done_masks(result), strict=True):
        grid = np.zeros(codes.shape, dtype=np.int64)
        alive = frame[~done]
        np.add.at(grid, (alive[:, 0], alive[:, 1]), 1)
        sums = np.lib.stride_tricks.sliding_window_view(grid, (window, window)).sum(
            axis=(2, 3)
        )
        densest = max(densest, int(sums.max()))
    return BottleneckFlow(
        width_m, flow, flow / width_m, densest / (window * CELL_M) ** 2
    )


def _done_masks(result: WalkResult) -> list[np.ndarray]:
    steps = np.arange(result.tracks.shape[0])[:, None]
    arrived = result.arrival_step[None, :]
    return list((arrived >= 0) & (steps >= arrived))


def weidmann_speed(density_per_m2: float) -> float:
    """Weidmann's fundamental diagram (1993): walking speed in m/s at a density.

    Formula::

        v(rho) = v0 [1 - exp(-gamma (1/rho - 1/rho_max))],  v0 = 1.34 m/s,
        gamma = 1.913 /m^2, rho_max = 5.4 /m^2 (0 at and above rho_max).
    """
    if density_per_m2 <= 0:
        return WEIDMANN_V0_M_S
    if density_per_m2 >= WEIDMANN_RHO_MAX_M2:
        return 0.0
    return WEIDMANN_V0_M_S * (
        1
        - math.exp(-WEIDMANN_GAMMA_M2 * (1 / density_per_m2 - 1 / WEIDMANN_RHO_MAX_M2))
    )


def ring_corridor_speed(
    density_per_m2: float,
    *,
    length_cells: int = 50,
    lanes: int = 5,
    steps: int = 300,
    warmup: int = 60,
    seed: int = 0,
) -> float:
    """Mean walking speed (m/s) at a density in a periodic corridor, through the movement engine.

    Walkers fill a corridor of ``lanes`` x ``length_cells`` at random to the density and all
    want to move one cell east each step; a walker in the last column re-enters the first
    column of its lane when that cell is free (the periodic boundary, outside the engine; that
    is its move of the step). Speed
    is the eastward distance per second averaged over walkers and the steps after ``warmup``.
    """
    cells = lanes * length_cells
    n = round(density_per_m2 * cells * CELL_M**2)
    if n == 0:
        return FREE_SPEED_M_S
    if n > cells:
        raise ValueError(f"density {density_per_m2} /m^2 exceeds one walker per cell")
    codes = np.full((length_cells, lanes + 2), Terrain.WALL, dtype=np.uint8)
    codes[:, 1 : lanes + 1] = Terrain.FLOOR
    passable = passable_mask(codes)
    rng = np.random.default_rng(seed)
    free = [(x, y) for x in range(length_cells) for y in range(1, lanes + 1)]
    pos = np.array(
        [free[k] for k in rng.choice(len(free), size=n, replace=False)], dtype=np.int64
    )
    occupancy = np.full(codes.shape, -1, dtype=np.int64)
    occupancy[pos[:, 0], pos[:, 1]] = np.arange(n)
    active = np.ones(n, dtype=bool)
    travelled = 0
    last = length_cells - 1
    for step in range(steps):
        # the periodic boundary: a walker in the last column steps to the first column of its
        # lane when that cell is free (its move of the step); the others propose one cell east
        moved_east = 0
        wrapped = np.zeros(n, dtype=bool)
        for i in np.flatnonzero(pos[:, 0] == last).tolist():
            y = int(pos[i, 1])
            if occupancy[0, y] < 0:
                occupancy[last, y] = -1
                occupancy[0, y] = i
                pos[i] = (0, y)
                wrapped[i] = True
                moved_east += 1
        proposals = pos.copy()
        inner = pos[:, 0] < last
        proposals[inner, 0] += 1
        result = resolve_moves(
            pos, proposals, active & inner & ~wrapped, passable, occupancy, rng
        )
        moved_east += int((result.positions[:, 0] - pos[:, 0]).sum())
        pos = result.positions
        if step >= warmup:
            travelled += moved_east
    seconds = (steps - warmup) * DT_S
    return travelled * CELL_M / (n * seconds)
