"""Concurrent one-cell moves with one entity per cell (paper Sec. 2.3.6).

Every active entity proposes at most one Moore step per physical step (dt = 1/3 s). Proposals are
resolved in one pass over a random order: the first claimant of a free cell wins (a random winner),
an entity may follow another that leaves its cell in the same step, and losers take a feasible
Moore-neighbour cell next to the cell they wanted (or stay when there is none). The pass never
produces two entities in one cell, opposing swaps (a mutual wait stays a wait), diagonal crossings
(two diagonal moves across the same 2 x 2 block), or diagonal steps between two blocked orthogonal
cells.

:func:`resolve_moves_reference` states the rule as a plain Python loop: it is the specification.
:func:`resolve_moves` runs the same passes compiled (Numba), and is tested equal to it on random
crowds (same positions, statuses, occupancy and random draws).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from mesa_llm_mobility.evacuation.plaza import MOORE_STEP_X, MOORE_STEP_Y, MOORE_STEPS

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

    The movers (active entities proposing another cell) go in a random order. In one pass over
    the pending movers, a mover whose move is illegal is blocked, one whose target is free
    moves, one whose target holds an entity still to move waits for the next pass, and one
    whose target holds a settled entity takes a random legal free cell next to both its own
    cell and the target (or is blocked). Passes repeat over the waiting movers until none is
    left, or until a pass moves none of them (all blocked). The passes are compiled
    (:func:`_compiled_pass`, Numba); they stop for each sidestep choice, which is drawn here,
    so ``rng`` gives the same draws in the same order as a plain loop.
    """
    n = positions.shape[0]
    pos = np.array(positions, dtype=np.int64)
    status = np.full(n, STAY, dtype=np.int8)
    movers = np.flatnonzero(
        np.asarray(active, dtype=bool) & np.any(proposals != positions, axis=1)
    )
    pending = movers[rng.permutation(movers.size)].astype(np.int64)
    settled = np.ones(n, dtype=bool)
    settled[pending] = False
    forbidden = forbidden or {}
    forbidden_ids = np.array(list(forbidden), dtype=np.int64)
    forbidden_masks = (
        np.stack([np.asarray(m, dtype=bool) for m in forbidden.values()])
        if forbidden
        else np.zeros((0, 1, 1), dtype=bool)
    )
    # counters: pending movers, the pass's cursor, movers waiting for the next pass, and the
    # mover that stopped for a sidestep choice
    counters = np.array([pending.size, 0, 0, -1], dtype=np.int64)
    candidates = np.zeros((8, 2), dtype=np.int64)
    diagonal_to = np.full(passable.size, -1, dtype=np.int64)
    run_pass = _compiled_pass()
    arguments = (
        pos,
        np.ascontiguousarray(proposals, dtype=np.int64),
        np.ascontiguousarray(passable, dtype=bool),
        occupancy,
        forbidden_ids,
        forbidden_masks,
        pending,
        counters,
        settled,
        status,
        diagonal_to,
        candidates,
    )
    choices = run_pass(*arguments, -1)
    while choices > 0:
        choices = run_pass(*arguments, int(rng.integers(choices)))
    return MoveResult(pos, status)


def resolve_moves_reference(
    positions: np.ndarray,
    proposals: np.ndarray,
    active: np.ndarray,
    passable: np.ndarray,
    occupancy: np.ndarray,
    rng: np.random.Generator,
    forbidden: dict[int, np.ndarray] | None = None,
) -> MoveResult:
    """The movement rule (paper Sec. 2.3.6) as a plain Python loop: :func:`resolve_moves`'s spec.

    The arguments, the result and the update of ``occupancy`` are those of
    :func:`resolve_moves`, and so are the draws from ``rng``: one permutation of the movers,
    then one integer for each sidestep choice, in the order the loop meets them.

    The rule:

    1. The movers (active entities whose proposal is another cell) are put in a random order.
    2. Each pass walks the pending movers in that order. A move is *legal* when the target is
       inside the grid, passable, not forbidden for the mover, one Moore step away, and, for a
       diagonal step, not between two blocked orthogonal cells and not crossing a diagonal
       move already made across the same 2 x 2 block. A mover whose move is illegal is
       *blocked* (stays). A mover whose target is free moves there (the first claimant wins:
       the random winner). A mover whose target is held by an entity that has not settled yet
       (a mover still to move) *waits* for the next pass: it may follow that entity out.
       A mover whose target is held by a settled entity (one that stays or already moved in)
       takes a random legal free cell that is a Moore neighbour of both its own cell and the
       target (a *sidestep*), or is blocked when there is none.
    3. Passes repeat over the waiting movers until none waits, or until a pass moves none of
       them: those wait on each other (a cycle, e.g. two movers wanting each other's cells,
       an opposing swap) and are all blocked.

    Returns:
        The positions after the pass and each entity's status (:data:`STAY` without a
        proposal, :data:`MOVED`, :data:`SIDESTEP` or :data:`BLOCKED`).
    """
    n = positions.shape[0]
    pos = np.array(positions, dtype=np.int64)
    status = np.full(n, STAY, dtype=np.int8)
    width, height = passable.shape
    forbidden = forbidden or {}
    movers = [
        int(i)
        for i in np.flatnonzero(active)
        if tuple(proposals[i]) != tuple(positions[i])
    ]
    order = [movers[k] for k in rng.permutation(len(movers))]
    settled = np.ones(n, dtype=bool)
    settled[order] = False
    diagonals: set[tuple[tuple[int, int], tuple[int, int]]] = set()
    """Diagonal moves made so far, as (from cell, to cell)."""

    def legal(i: int, here: tuple[int, int], there: tuple[int, int]) -> bool:
        (x, y), (tx, ty) = here, there
        if not (0 <= tx < width and 0 <= ty < height) or not passable[tx, ty]:
            return False
        if i in forbidden and forbidden[i][tx, ty]:
            return False
        dx, dy = tx - x, ty - y
        if max(abs(dx), abs(dy)) != 1:
            return False
        if dx and dy:
            side_a, side_b = (x + dx, y), (x, y + dy)
            if not (passable[side_a] or passable[side_b]):
                return False  # no cutting between two blocked orthogonal cells
            if (side_a, side_b) in diagonals or (side_b, side_a) in diagonals:
                return False  # no crossing of a diagonal move across the same block
        return True

    def settle(i: int, kind: int, there: tuple[int, int] | None = None) -> None:
        if there is not None:
            here = (int(pos[i, 0]), int(pos[i, 1]))
            occupancy[here] = -1
            occupancy[there] = i
            pos[i] = there
            if here[0] != there[0] and here[1] != there[1]:
                diagonals.add((here, there))
        status[i] = kind
        settled[i] = True

    pending = order
    while pending:
        waiting = []
        for i in pending:
            here = (int(pos[i, 0]), int(pos[i, 1]))
            target = (int(proposals[i, 0]), int(proposals[i, 1]))
            if not legal(i, here, target):
                settle(i, BLOCKED)
            elif occupancy[target] < 0:
                settle(i, MOVED, target)
            elif not settled[occupancy[target]]:
                waiting.append(i)
            else:
                sidesteps = [
                    (here[0] + dx, here[1] + dy)
                    for dx, dy in MOORE_STEPS
                    if max(abs(here[0] + dx - target[0]), abs(here[1] + dy - target[1]))
                    == 1
                    and legal(i, here, (here[0] + dx, here[1] + dy))
                    and occupancy[here[0] + dx, here[1] + dy] < 0
                ]
                if sidesteps:
                    settle(i, SIDESTEP, sidesteps[int(rng.integers(len(sidesteps)))])
                else:
                    settle(i, BLOCKED)
        if len(waiting) == len(pending):  # nobody moved: they wait on each other
            for i in waiting:
                settle(i, BLOCKED)
            break
        pending = waiting
    return MoveResult(pos, status)


@cache
def _compiled_pass():
    """:func:`_passes` compiled, once a process (Numba imported only then)."""
    import numba  # noqa: PLC0415  (no import-time cost)

    return numba.njit(cache=True, nogil=True)(_passes)


def _passes(
    pos,
    proposals,
    passable,
    occupancy,
    forbidden_ids,
    forbidden_masks,
    pending,
    counters,
    settled,
    status,
    diagonal_to,
    candidates,
    choice,
):  # pragma: no cover
    """The passes of :func:`resolve_moves`, from where they stopped.

    With ``choice >= 0`` the mover that stopped takes its ``choice``-th candidate cell first.
    Returns the number of candidate cells when a mover needs a sidestep choice (its candidates
    in ``candidates``), else 0 once every mover has settled. A diagonal move from a cell is
    kept in ``diagonal_to``: at most one mover leaves a cell during the passes, since a mover
    that entered it has settled.
    """
    width, height = passable.shape

    def legal(i, x, y, tx, ty):
        if not (0 <= tx < width and 0 <= ty < height) or not passable[tx, ty]:
            return False
        for j in range(forbidden_ids.size):
            if forbidden_ids[j] == i and forbidden_masks[j, tx, ty]:
                return False
        dx, dy = tx - x, ty - y
        if max(abs(dx), abs(dy)) != 1:
            return False
        if dx != 0 and dy != 0:
            if not (passable[x + dx, y] or passable[x, y + dy]):
                return False
            # no crossing of a diagonal move made across the same 2 x 2 block, either way
            a = (x + dx) * height + y
            b = x * height + y + dy
            if diagonal_to[a] == b or diagonal_to[b] == a:
                return False
        return True

    def move(i, tx, ty, kind):
        x, y = pos[i, 0], pos[i, 1]
        occupancy[x, y] = -1
        occupancy[tx, ty] = i
        pos[i, 0] = tx
        pos[i, 1] = ty
        if tx != x and ty != y:
            diagonal_to[x * height + y] = tx * height + ty
        status[i] = kind
        settled[i] = True

    if choice >= 0:
        move(counters[3], candidates[choice, 0], candidates[choice, 1], SIDESTEP)
        counters[1] += 1
    while True:
        while counters[1] < counters[0]:
            i = pending[counters[1]]
            x, y = pos[i, 0], pos[i, 1]
            tx, ty = proposals[i, 0], proposals[i, 1]
            if not legal(i, x, y, tx, ty):
                status[i] = BLOCKED
                settled[i] = True
            elif occupancy[tx, ty] < 0:
                move(i, tx, ty, MOVED)
            elif not settled[occupancy[tx, ty]]:
                pending[counters[2]] = i  # waits (its slot was already passed)
                counters[2] += 1
            else:
                k = 0
                for step in range(8):
                    sx, sy = x + MOORE_STEP_X[step], y + MOORE_STEP_Y[step]
                    if (sx == tx and sy == ty) or max(abs(sx - tx), abs(sy - ty)) > 1:
                        continue
                    if legal(i, x, y, sx, sy) and occupancy[sx, sy] < 0:
                        candidates[k, 0] = sx
                        candidates[k, 1] = sy
                        k += 1
                if k > 0:
                    counters[3] = i
                    return k
                status[i] = BLOCKED
                settled[i] = True
            counters[1] += 1
        waiting = counters[2]
        if waiting == counters[0]:
            for j in range(waiting):
                status[pending[j]] = BLOCKED
                settled[pending[j]] = True
            return 0
        if waiting == 0:
            return 0
        counters[0] = waiting
        counters[1] = 0
        counters[2] = 0
