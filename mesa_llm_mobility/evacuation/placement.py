"""Where a plaza's pedestrians start, and the plaza facts measured once at setup.

Start cells (the plaza's listed start cells, in a matched block's permutation, or random
walkable cells), the walkable cell just inside each opening (a waypoint), dead-end pockets, and
every start cell's shortest walking distance to an exit (the outcome measures' baseline).
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from mesa_llm_mobility.evacuation.plaza import (
    MOORE_STEPS,
    Plaza,
    Terrain,
    passable_mask,
)
from mesa_llm_mobility.evacuation.routing import GridGraph
from mesa_llm_mobility.evacuation.timing import MAX_BLOCK, MIN_BLOCK


def start_cells(
    plaza: Plaza,
    n: int,
    block: int | None,
    random_spawn: bool | None,
    rng: np.random.Generator,
) -> list[tuple[int, int]]:
    """The start cells of ``n`` pedestrians.

    Args:
        plaza: The plaza.
        n: Pedestrians.
        block: Matched block 1-8 (the start cells in a fixed permutation of it), or ``None``.
        random_spawn: Random walkable cells instead of the start cells (``None``: only when
            there are more pedestrians than start cells).
        rng: The model's generator (random cells are drawn from it).
    """
    spawns = list(plaza.spawn_cells)
    if random_spawn is None:
        random_spawn = n > len(spawns)
    if random_spawn:
        cells = [
            tuple(c) for c in plaza.walkable_coords() if tuple(c) != plaza.threat_cell
        ]
        if n > len(cells):
            raise ValueError(
                f"{n} pedestrians do not fit on {len(cells)} walkable cells"
            )
        chosen = rng.choice(len(cells), size=n, replace=False)
        return [(int(cells[k][0]), int(cells[k][1])) for k in chosen]
    if n > len(spawns):
        raise ValueError(
            f"{n} pedestrians but the plaza has {len(spawns)} start cells; use random_spawn=True"
        )
    if block is not None:
        if not MIN_BLOCK <= block <= MAX_BLOCK:
            raise ValueError(
                f"block must be {MIN_BLOCK}-{MAX_BLOCK} (a matched block of the "
                f"8 x 8 design), got {block}"
            )
        order = np.random.default_rng(block).permutation(len(spawns))
        spawns = [spawns[k] for k in order]
    return spawns[:n]


def inner_cell(plaza: Plaza, cell: tuple[int, int]) -> tuple[int, int]:
    """The first floor cell next to an opening's ``cell`` (Moore order)."""
    x, y = cell
    for dx, dy in MOORE_STEPS:
        nx, ny = x + dx, y + dy
        if (
            0 <= nx < plaza.width
            and 0 <= ny < plaza.height
            and plaza.raw[nx, ny] == Terrain.FLOOR
        ):
            return nx, ny
    raise ValueError(f"opening cell {cell} has no walkable neighbour")


def pocket_cells(passable: np.ndarray) -> np.ndarray:
    """Passable cells with at most two passable orthogonal neighbours (dead ends, corridors)."""
    padded = np.pad(passable, 1, constant_values=False)
    count = (
        padded[2:, 1:-1].astype(int)
        + padded[:-2, 1:-1]
        + padded[1:-1, 2:]
        + padded[1:-1, :-2]
    )
    return passable & (count <= 2)


def shortest_exit_distances(
    plaza: Plaza,
    graph: GridGraph,
    opening_cells: list[np.ndarray],
    starts: list[tuple[int, int]],
) -> np.ndarray:
    """Metres from each start cell to the nearest exit cell (gates when there is no exit)."""
    height = plaza.height
    weights = graph.weights_for(passable_mask(plaza.raw).ravel())
    matrix = csr_matrix(
        (weights, graph.indices, graph.indptr), shape=(graph.n_cells,) * 2
    )
    kinds = {o.kind for o in plaza.openings}
    wanted = "exit" if "exit" in kinds else "gate"  # a plaza without exits: gates
    exit_cells = np.concatenate(
        [opening_cells[k] for k, o in enumerate(plaza.openings) if o.kind == wanted]
    )
    dist = dijkstra(matrix, indices=exit_cells, min_only=True)
    return np.array([dist[x * height + y] * plaza.cell_size_m for x, y in starts])
