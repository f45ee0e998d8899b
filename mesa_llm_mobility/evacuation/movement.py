"""Concurrent one-cell moves with one entity per cell (paper Sec. 2.3.6).

Every active entity proposes at most one Moore step per physical step (dt = 1/3 s). Proposals are
resolved in one pass over a random order: the first claimant of a free cell wins (a random winner),
an entity may follow another that leaves its cell in the same step, and losers take a feasible
Moore-neighbour cell next to the cell they wanted (or stay when there is none). The pass never
produces two entities in one cell, opposing swaps (a mutual wait stays a wait), diagonal crossings
(two diagonal moves across the same 2 x 2 block), or diagonal steps between two blocked orthogonal
cells.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mesa_llm_mobility.evacuation.plaza import MOORE_STEPS

STAY, MOVED, SIDESTEP, BLOCKED = 0, 1, 2, 3


@dataclass(frozen=True)
class MoveResult:
    """Outcome of one movement pass.

    Attributes:
        positions: ``(n, 2)`` positions after the pass.
        status: Per entity: 0 stayed (no proposal), 1 moved as proposed, 2 took a sidestep,
            3 blocked (proposal refused, stayed).
    """

    positions: np.ndarray
    status: np.ndarray


def resolve_moves(
    positions: np.ndarray,
    proposals: np.ndarray,
    active: np.ndarray,
    passable: np.ndarray,
    occupancy: np.ndarray,
    rng: np.random.Generator,
    forbidden: dict[int, np.ndarray] | None = None,
) -> MoveResult:
    """Resolve proposed moves; ``occupancy`` is updated in place.

    Args:
        positions: ``(n, 2)`` current cells of all entities (index = entity id).
        proposals: ``(n, 2)`` wanted cells (equal to the position, or Moore-adjacent to it).
        active: Entities taking part (others, e.g. bodies, only occupy their cells).
        passable: ``[x, y]`` cells that may be entered (effective layer).
        occupancy: ``[x, y]`` entity id or ``-1``; must agree with ``positions``.
        rng: Source of the random order and sidestep choices.
        forbidden: Extra ``[x, y]`` masks of cells some entities may not enter, by entity id
            (the adversary does not leave through openings).
    """
    n = positions.shape[0]
    pos = positions.copy()
    status = np.full(n, STAY, dtype=np.int8)
    width, height = passable.shape
    movers = [
        int(i)
        for i in np.flatnonzero(active)
        if proposals[i, 0] != positions[i, 0] or proposals[i, 1] != positions[i, 1]
    ]
    order = [movers[k] for k in rng.permutation(len(movers))]
    diagonal_moves: set[tuple[int, int, int, int]] = set()
    settled = np.ones(n, dtype=bool)
    settled[order] = False

    def legal(i: int, x: int, y: int, tx: int, ty: int) -> bool:
        if not (0 <= tx < width and 0 <= ty < height) or not passable[tx, ty]:
            return False
        if forbidden and i in forbidden and forbidden[i][tx, ty]:
            return False
        dx, dy = tx - x, ty - y
        if max(abs(dx), abs(dy)) != 1:
            return False
        if dx and dy:
            if not (passable[x + dx, y] or passable[x, y + dy]):
                return False
            if (x + dx, y, x, y + dy) in diagonal_moves or (
                x,
                y + dy,
                x + dx,
                y,
            ) in diagonal_moves:
                return False
        return True

    def move(i: int, x: int, y: int, tx: int, ty: int, kind: int) -> None:
        occupancy[x, y] = -1
        occupancy[tx, ty] = i
        pos[i] = (tx, ty)
        if tx != x and ty != y:
            diagonal_moves.add((x, y, tx, ty))
        status[i] = kind
        settled[i] = True

    pending = order
    while pending:
        deferred = []
        for i in pending:
            x, y = int(pos[i, 0]), int(pos[i, 1])
            tx, ty = int(proposals[i, 0]), int(proposals[i, 1])
            if not legal(i, x, y, tx, ty):
                status[i] = BLOCKED
                settled[i] = True
                continue
            occupant = occupancy[tx, ty]
            if occupant < 0:
                move(i, x, y, tx, ty, MOVED)
            elif not settled[occupant]:
                deferred.append(i)
            else:
                _sidestep(i, x, y, tx, ty, occupancy, legal, move, rng, status, settled)
        if len(deferred) == len(pending):
            for i in deferred:
                status[i] = BLOCKED
                settled[i] = True
            break
        pending = deferred
    return MoveResult(pos, status)


def _sidestep(i, x, y, tx, ty, occupancy, legal, move, rng, status, settled) -> None:
    options = []
    for dx, dy in MOORE_STEPS:
        sx, sy = x + dx, y + dy
        if (sx, sy) == (tx, ty) or max(abs(sx - tx), abs(sy - ty)) > 1:
            continue
        if legal(i, x, y, sx, sy) and occupancy[sx, sy] < 0:
            options.append((sx, sy))
    if options:
        sx, sy = options[int(rng.integers(len(options)))]
        move(i, x, y, sx, sy, SIDESTEP)
    else:
        status[i] = BLOCKED
        settled[i] = True
