import numpy as np
import pytest

from mesa_llm_mobility.evacuation.communication import pairs_within
from mesa_llm_mobility.evacuation.model import EvacuationModel


def test_pairs_within_radius_inclusive():
    r, s, d = pairs_within(
        np.array([[0, 0], [10, 0]]), np.array([[0, 3], [40, 0]]), 37.5
    )
    assert sorted(zip(r.tolist(), s.tolist(), strict=True)) == [(0, 0), (1, 0), (1, 1)]
    assert d[(r == 0) & (s == 0)][0] == 3.0


@pytest.mark.parametrize("seed", range(4))
def test_pairs_within_are_the_full_tables_pairs_in_its_order(seed):
    rng = np.random.default_rng(seed)
    receivers = rng.integers(0, 80, size=(300, 2))
    senders = np.vstack([receivers[:40], rng.integers(0, 80, size=(60, 2))])
    for radius in (0.0, 5.0, 12.5, 37.5):
        table = np.sqrt(((receivers[:, None] - senders[None]) ** 2).sum(axis=2))
        r, s = np.nonzero(table <= radius + 1e-9)
        got = pairs_within(receivers, senders, radius)
        assert np.array_equal(got[0], r) and np.array_equal(got[1], s)
        assert np.array_equal(got[2], table[r, s])


def test_shouts_and_exit_information_are_recorded_sender_to_receiver():
    model = EvacuationModel(composition="H", block=3, rng=1, time_limit_s=120).run()
    events = model.events_frame()
    heard = events[events["event"] == "shout_heard"]
    assert len(heard) > 0
    pos = model.positions_frame().set_index(["step", "agent_id"])
    for row in heard.itertuples():
        a = pos.loc[(row.step, row.agent_id)]
        b = pos.loc[(row.step, row.other_id)]
        assert (
            np.hypot(a.x - b.x, a.y - b.y) * 0.4 <= 15.0 + 1e-9
        )  # heard within 15 m, any line of sight
    sent = events[events["event"] == "exit_info_sent"]
    received = events[events["event"] == "exit_info_received"]
    assert len(sent) == len(received)
    assert list(zip(sent["agent_id"], sent["other_id"], strict=True)) == list(
        zip(received["other_id"], received["agent_id"], strict=True)
    )
