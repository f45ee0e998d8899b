"""The compiled movement pass against the plain Python loop it replaced: same moves, same draws."""

import numpy as np
import pytest

from mesa_llm_mobility.evacuation.movement import (
    BLOCKED,
    MOVED,
    SIDESTEP,
    STAY,
    MoveResult,
    resolve_moves,
)
from mesa_llm_mobility.evacuation.plaza import MOORE_STEPS


def reference_resolve_moves(
    positions: np.ndarray,
    proposals: np.ndarray,
    active: np.ndarray,
    passable: np.ndarray,
    occupancy: np.ndarray,
    rng: np.random.Generator,
    forbidden: dict[int, np.ndarray] | None = None,
) -> MoveResult:
    """The movement pass as a plain Python loop (before it was compiled), for comparison.

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
                _reference_sidestep(
                    i, x, y, tx, ty, occupancy, legal, move, rng, status, settled
                )
        if len(deferred) == len(pending):
            for i in deferred:
                status[i] = BLOCKED
                settled[i] = True
            break
        pending = deferred
    return MoveResult(pos, status)


def _reference_sidestep(
    i, x, y, tx, ty, occupancy, legal, move, rng, status, settled
) -> None:
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


def crowd(rng, width, height, density):
    passable = rng.random((width, height)) > 0.12
    cells = np.argwhere(passable)
    n = max(2, int(density * len(cells)))
    positions = cells[rng.choice(len(cells), size=n, replace=False)].astype(np.int64)
    occupancy = np.full((width, height), -1, dtype=np.int64)
    occupancy[positions[:, 0], positions[:, 1]] = np.arange(n)
    return positions, occupancy, passable


@pytest.mark.parametrize("seed", range(8))
def test_compiled_pass_equals_the_python_loop(seed):
    """Positions, statuses, occupancy and the generator's state agree after every pass.

    Dense crowds (up to 90 % of the cells) make followers, waits, blocked chains, sidesteps and
    diagonal crossings common; some entities are inactive and the last one has forbidden cells.
    """
    rng = np.random.default_rng(seed)
    width, height = rng.integers(6, 30, size=2)
    positions, occupancy, passable = crowd(rng, width, height, rng.uniform(0.2, 0.9))
    n = len(positions)
    forbidden = {n - 1: rng.random((width, height)) < 0.3}
    mine = (positions.copy(), occupancy.copy(), np.random.default_rng(seed + 100))
    theirs = (positions.copy(), occupancy.copy(), np.random.default_rng(seed + 100))
    statuses = set()
    for _ in range(25):
        steps = rng.integers(-1, 2, size=positions.shape)
        active = rng.random(n) > 0.1
        results = []
        for state, resolve in (
            (mine, resolve_moves),
            (theirs, reference_resolve_moves),
        ):
            pos, occ, gen = state
            proposals = np.clip(pos + steps, 0, [width - 1, height - 1])
            results.append(
                resolve(pos, proposals, active, passable, occ, gen, forbidden)
            )
            pos[:] = results[-1].positions
        np.testing.assert_array_equal(results[0].status, results[1].status)
        np.testing.assert_array_equal(mine[0], theirs[0])
        np.testing.assert_array_equal(mine[1], theirs[1])
        assert mine[2].bit_generator.state == theirs[2].bit_generator.state
        statuses.update(results[0].status.tolist())
    assert statuses == {STAY, MOVED, SIDESTEP, BLOCKED}
