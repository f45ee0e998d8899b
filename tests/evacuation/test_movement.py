import numpy as np
import pytest

from mesa_llm_mobility.evacuation.movement import (
    BLOCKED,
    MOVED,
    SIDESTEP,
    resolve_moves,
)


def setup(positions, width=6, height=6):
    positions = np.array(positions, dtype=np.int64)
    occupancy = np.full((width, height), -1, dtype=np.int64)
    for i, (x, y) in enumerate(positions):
        occupancy[x, y] = i
    return positions, occupancy, np.ones((width, height), dtype=bool)


def test_conflict_has_one_random_winner_and_loser_sidesteps_next_to_target():
    winners = set()
    for seed in range(20):
        pos, occ, passable = setup([(1, 2), (3, 2)])
        res = resolve_moves(
            pos,
            np.array([(2, 2), (2, 2)]),
            np.ones(2, bool),
            passable,
            occ,
            np.random.default_rng(seed),
        )
        assert sorted(res.status.tolist()) == [MOVED, SIDESTEP]
        winner = int(np.flatnonzero(res.status == MOVED)[0])
        winners.add(winner)
        loser = 1 - winner
        assert tuple(res.positions[winner]) == (2, 2)
        assert max(abs(res.positions[loser] - np.array([2, 2]))) == 1
        assert len({tuple(p) for p in res.positions}) == 2
    assert winners == {0, 1}


def test_no_swap_but_following_is_allowed():
    pos, occ, passable = setup([(1, 1), (2, 1)])
    res = resolve_moves(
        pos,
        np.array([(2, 1), (1, 1)]),
        np.ones(2, bool),
        passable,
        occ,
        np.random.default_rng(0),
    )
    assert res.status.tolist() == [BLOCKED, BLOCKED]
    pos, occ, passable = setup([(1, 1), (2, 1), (3, 1)])
    res = resolve_moves(
        pos,
        np.array([(2, 1), (3, 1), (4, 1)]),
        np.ones(3, bool),
        passable,
        occ,
        np.random.default_rng(0),
    )
    assert res.status.tolist() == [MOVED, MOVED, MOVED]


def test_no_diagonal_crossing_and_no_corner_cutting():
    for seed in range(10):
        pos, occ, passable = setup([(1, 1), (2, 1)])
        res = resolve_moves(
            pos,
            np.array([(2, 2), (1, 2)]),
            np.ones(2, bool),
            passable,
            occ,
            np.random.default_rng(seed),
        )
        moved = res.status == MOVED
        assert moved.sum() == 1  # the second diagonal would cross the first
    pos, occ, passable = setup([(1, 1)])
    passable[2, 1] = passable[1, 2] = False
    res = resolve_moves(
        pos,
        np.array([(2, 2)]),
        np.ones(1, bool),
        passable,
        occ,
        np.random.default_rng(0),
    )
    assert res.status.tolist() == [BLOCKED]
    passable[2, 1] = (
        True  # one orthogonal open: allowed (paper: only between two blocked cells)
    )
    res = resolve_moves(
        pos,
        np.array([(2, 2)]),
        np.ones(1, bool),
        passable,
        occ,
        np.random.default_rng(0),
    )
    assert res.status.tolist() == [MOVED]


def test_forbidden_cells_and_walls():
    pos, occ, passable = setup([(1, 1)])
    forbidden = np.zeros_like(passable)
    forbidden[2, 1] = True
    res = resolve_moves(
        pos,
        np.array([(2, 1)]),
        np.ones(1, bool),
        passable,
        occ,
        np.random.default_rng(0),
        {0: forbidden},
    )
    assert res.status.tolist() == [BLOCKED]
    passable[1, 2] = False
    res = resolve_moves(
        pos,
        np.array([(1, 2)]),
        np.ones(1, bool),
        passable,
        occ,
        np.random.default_rng(0),
    )
    assert res.status.tolist() == [BLOCKED]


@pytest.mark.parametrize("seed", range(5))
def test_random_crowd_invariants(seed):
    rng = np.random.default_rng(seed)
    width, height = 12, 12
    passable = rng.random((width, height)) > 0.15
    cells = np.argwhere(passable)
    chosen = cells[rng.choice(len(cells), size=60, replace=False)]
    pos, occ, _ = setup(chosen, width, height)
    for _ in range(30):
        steps = rng.integers(-1, 2, size=pos.shape)
        proposals = np.clip(pos + steps, 0, [width - 1, height - 1])
        before = pos.copy()
        res = resolve_moves(pos, proposals, np.ones(len(pos), bool), passable, occ, rng)
        pos = res.positions
        assert len({tuple(p) for p in pos}) == len(pos)  # one entity per cell
        assert np.all(np.abs(pos - before).max(axis=1) <= 1)  # at most one cell
        assert passable[pos[:, 0], pos[:, 1]].all()
        for i in range(len(pos)):  # no swaps
            j = occ[tuple(before[i])]
            if j >= 0 and j != i:
                assert tuple(pos[j]) != tuple(before[i]) or tuple(pos[i]) != tuple(
                    before[j]
                )
        assert all(occ[tuple(p)] == i for i, p in enumerate(pos))
