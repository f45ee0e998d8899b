"""The movement rule on hand-made cases, for the compiled pass and its plain reference alike."""

import numpy as np
import pytest

from mesa_llm_mobility.evacuation.movement import (
    BLOCKED,
    MOVED,
    SIDESTEP,
    STAY,
    resolve_moves,
    resolve_moves_reference,
)


@pytest.fixture(
    params=[resolve_moves, resolve_moves_reference], ids=["compiled", "reference"]
)
def resolve(request):
    return request.param


def setup(positions, width=6, height=6):
    positions = np.array(positions, dtype=np.int64)
    occupancy = np.full((width, height), -1, dtype=np.int64)
    for i, (x, y) in enumerate(positions):
        occupancy[x, y] = i
    return positions, occupancy, np.ones((width, height), dtype=bool)


def test_conflict_has_one_random_winner_and_loser_sidesteps_next_to_target(resolve):
    winners = set()
    for seed in range(20):
        pos, occ, passable = setup([(1, 2), (3, 2)])
        res = resolve(
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


def test_no_swap_but_following_is_allowed(resolve):
    pos, occ, passable = setup([(1, 1), (2, 1)])
    res = resolve(
        pos,
        np.array([(2, 1), (1, 1)]),
        np.ones(2, bool),
        passable,
        occ,
        np.random.default_rng(0),
    )
    assert res.status.tolist() == [BLOCKED, BLOCKED]
    pos, occ, passable = setup([(1, 1), (2, 1), (3, 1)])
    res = resolve(
        pos,
        np.array([(2, 1), (3, 1), (4, 1)]),
        np.ones(3, bool),
        passable,
        occ,
        np.random.default_rng(0),
    )
    assert res.status.tolist() == [MOVED, MOVED, MOVED]


def test_no_diagonal_crossing_and_no_corner_cutting(resolve):
    for seed in range(10):
        pos, occ, passable = setup([(1, 1), (2, 1)])
        res = resolve(
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
    res = resolve(
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
    res = resolve(
        pos,
        np.array([(2, 2)]),
        np.ones(1, bool),
        passable,
        occ,
        np.random.default_rng(0),
    )
    assert res.status.tolist() == [MOVED]


def test_forbidden_cells_and_walls(resolve):
    pos, occ, passable = setup([(1, 1)])
    forbidden = np.zeros_like(passable)
    forbidden[2, 1] = True
    res = resolve(
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
    res = resolve(
        pos,
        np.array([(1, 2)]),
        np.ones(1, bool),
        passable,
        occ,
        np.random.default_rng(0),
    )
    assert res.status.tolist() == [BLOCKED]


@pytest.mark.parametrize("seed", range(5))
def test_random_crowd_invariants(resolve, seed):
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
        res = resolve(pos, proposals, np.ones(len(pos), bool), passable, occ, rng)
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


def random_crowd(rng):
    """A random grid with walls, a crowd on it, inactive bodies and an adversary's forbidden cells."""
    width, height = (int(v) for v in rng.integers(4, 28, size=2))
    passable = rng.random((width, height)) > rng.uniform(0.05, 0.4)
    cells = np.argwhere(passable)
    n = max(2, int(rng.uniform(0.1, 0.95) * len(cells)))
    positions = cells[rng.choice(len(cells), size=n, replace=False)].astype(np.int64)
    occupancy = np.full((width, height), -1, dtype=np.int64)
    occupancy[positions[:, 0], positions[:, 1]] = np.arange(n)
    forbidden = {n - 1: rng.random((width, height)) < 0.3}  # the adversary's openings
    return positions, occupancy, passable, forbidden


def random_proposals(rng, positions, width, height):
    """Moore steps (into walls and off the grid too), stays, some jumps, and a funnel.

    A random third of the entities head for one cell near a random point (conflicts); a few
    propose a cell two steps away (illegal).
    """
    steps = rng.integers(-1, 2, size=positions.shape)
    proposals = positions + steps
    funnel = rng.integers(0, [width, height])
    heading = rng.random(len(positions)) < 0.33
    toward = np.sign(funnel - positions)
    proposals[heading] = positions[heading] + toward[heading]
    jump = rng.random(len(positions)) < 0.02
    proposals[jump] = positions[jump] + 2
    return proposals


@pytest.mark.parametrize("seed", range(12))
def test_compiled_pass_equals_the_reference_on_random_crowds(seed):
    """The compiled pass and the plain reference agree on 25 crowds x 12 steps per seed.

    Positions, statuses, occupancy and the generator's state are compared after every pass;
    the crowds must between them contain conflicts (two movers wanting one cell), moves
    refused by walls or the grid's edge, refusals of the adversary's forbidden cells, every
    status, and inactive entities that only hold their cells.
    """
    rng = np.random.default_rng(seed)
    seen = {"conflicts": 0, "walls": 0, "forbidden": 0, "inactive": 0}
    statuses = set()
    for _ in range(25):
        positions, occupancy, passable, forbidden = random_crowd(rng)
        width, height = passable.shape
        n = len(positions)
        draws = int(rng.integers(1 << 30))
        mine = (positions.copy(), occupancy.copy(), np.random.default_rng(draws))
        spec = (positions.copy(), occupancy.copy(), np.random.default_rng(draws))
        for _ in range(12):
            active = rng.random(n) > 0.1
            proposals = random_proposals(rng, mine[0], width, height)
            moving = active & np.any(proposals != mine[0], axis=1)
            targets = [tuple(c) for c in proposals[moving].tolist()]
            seen["conflicts"] += len(targets) - len(set(targets))
            inside = (proposals[moving] >= 0).all(axis=1) & (
                proposals[moving] < [width, height]
            ).all(axis=1)
            seen["walls"] += int((~inside).sum()) + int(
                (~passable[tuple(proposals[moving][inside].T)]).sum()
            )
            tx, ty = proposals[n - 1]
            seen["forbidden"] += bool(
                active[n - 1]
                and 0 <= tx < width
                and 0 <= ty < height
                and forbidden[n - 1][tx, ty]
            )
            seen["inactive"] += int((~active).sum())
            results = []
            for (pos, occ, gen), resolve in (
                (mine, resolve_moves),
                (spec, resolve_moves_reference),
            ):
                results.append(
                    resolve(pos, proposals, active, passable, occ, gen, forbidden)
                )
                pos[:] = results[-1].positions
            np.testing.assert_array_equal(results[0].status, results[1].status)
            np.testing.assert_array_equal(mine[0], spec[0])
            np.testing.assert_array_equal(mine[1], spec[1])
            assert mine[2].bit_generator.state == spec[2].bit_generator.state
            statuses.update(results[0].status.tolist())
    assert statuses == {STAY, MOVED, SIDESTEP, BLOCKED}
    assert all(count > 0 for count in seen.values()), seen
