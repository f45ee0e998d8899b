"""The shout log answers as the per-listener dictionaries it replaces."""

import numpy as np

from mesa_llm_mobility.evacuation.hearing import ShoutLog


def test_recent_shouts_and_first_hearings_match_per_listener_dictionaries():
    rng = np.random.default_rng(7)
    n = 40
    log = ShoutLog(n)
    heard = [{} for _ in range(n)]  # listener -> shouter -> (step, x, y)
    ever = [set() for _ in range(n)]
    for step in range(0, 120, 3):
        pairs = {(int(a), int(b)) for a, b in rng.integers(0, n, (60, 2)) if a != b}
        pairs = sorted(pairs)
        listeners = np.array([p[0] for p in pairs], dtype=np.int64)
        shouters = np.array([p[1] for p in pairs], dtype=np.int64)
        cells = rng.integers(0, 50, (len(pairs), 2))
        first = log.hear(step, listeners, shouters, cells)
        expected_first = []
        for (li, si), (x, y) in zip(pairs, cells.tolist(), strict=True):
            expected_first.append(si not in ever[li])
            ever[li].add(si)
            heard[li][si] = (step, x, y)
        assert first.tolist() == expected_first
        cutoff = step - 30
        if step % 9 == 0:
            log.forget_before(cutoff)
        for listener in range(n):
            expected = sorted(
                (-s_step, s, x, y)
                for s, (s_step, x, y) in heard[listener].items()
                if s_step >= cutoff
            )[:5]
            got = log.recent(listener, cutoff, 5)
            assert [(-s_step, s, x, y) for s_step, s, x, y in got] == expected
        listeners = rng.permutation(n).tolist()  # any order, as a step's requests come
        together = log.recent_many(listeners, cutoff, 5)
        assert together == [log.recent(li, cutoff, 5) for li in listeners]
